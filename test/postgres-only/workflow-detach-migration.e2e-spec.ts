import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { WorkflowApprovals1795783000000 } from '../../src/database/migrations/1795783000000-WorkflowApprovals';
import { dataSourceOptions } from '../../src/database/data-source-options';

/**
 * `wait` names the wait step now: the upgrade writes a saved workflow step's `wait: false` as
 * `detach: true` (and drops `wait: true`, the default), in every step and the onFailure step,
 * and leaves other steps alone; the downgrade writes them back.
 */
describe('migration WorkflowApprovals: a workflow step’s wait becomes detach', () => {
  const name = `platform_detach_${randomBytes(4).toString('hex')}`;
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  let db: Client;

  beforeAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    // The schema just before the migration.
    const all = new DataSource(dataSourceOptions(url, 2));
    await all.initialize();
    const older = all.migrations
      .filter((m) => Number(/\d+$/.exec(m.name ?? '')![0]) < 1795783000000)
      .map((m) => m.constructor as new () => object);
    await all.destroy();
    const previous = new DataSource({ ...dataSourceOptions(url, 2), migrations: older });
    await previous.initialize();
    await previous.runMigrations({ transaction: 'each' });
    await previous.destroy();
    db = new Client({ connectionString: url });
    await db.connect();
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('rewrites the steps that start child runs, and back', async () => {
    const saved = [
      {
        name: 'a',
        steps: [
          { id: 'x', workflow: 'w', wait: false },
          { id: 'y', workflow: 'w', wait: true },
          { id: 'z', agent: 'q' },
        ],
      },
      { name: 'b', steps: [{ id: 'x', agent: 'q' }], onFailure: { id: 'f', workflow: 'w', wait: false } },
      { name: 'c', steps: [{ id: 'x', sleep: { seconds: 5 } }] },
    ];
    // The rows alone: the versions' workflows and organizations do not matter here.
    await db.query('SET session_replication_role = replica');
    for (const definition of saved) {
      await db.query(`INSERT INTO workflow_versions VALUES ($1, $2, 1, $3, $4, now())`, [
        randomUUID(),
        randomUUID(),
        definition,
        randomUUID(),
      ]);
    }
    const definitions = async () =>
      (await db.query<{ definition: { name: string } }>('SELECT definition FROM workflow_versions')).rows
        .map((r) => r.definition)
        .sort((a, b) => a.name.localeCompare(b.name));
    const runner = { query: (sql: string) => db.query(sql) } as never;

    await new WorkflowApprovals1795783000000().up(runner);
    expect(await definitions()).toEqual([
      {
        name: 'a',
        steps: [
          { id: 'x', workflow: 'w', detach: true },
          { id: 'y', workflow: 'w' },
          { id: 'z', agent: 'q' },
        ],
      },
      { name: 'b', steps: [{ id: 'x', agent: 'q' }], onFailure: { id: 'f', workflow: 'w', detach: true } },
      saved[2],
    ]);

    await new WorkflowApprovals1795783000000().down(runner);
    expect(await definitions()).toEqual([
      {
        name: 'a',
        steps: [
          { id: 'x', workflow: 'w', wait: false },
          { id: 'y', workflow: 'w' },
          { id: 'z', agent: 'q' },
        ],
      },
      saved[1],
      saved[2],
    ]);
  });
});
