import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { runMigrationsLocked } from '../../src/database/migrator';

/**
 * Needs a Postgres server: advisory locks are what this checks, and embedded PGlite shares
 * one session between connections, so they cannot exclude each other there.
 */
describe('migrations at start', () => {
  const name = `platform_lock_${randomBytes(4).toString('hex')}`;
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const url = () => Object.assign(new URL(server), { pathname: `/${name}` }).toString();

  beforeAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
  });

  afterAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('lets three instances start at once on an empty database without racing', async () => {
    const instances = [0, 1, 2].map(() => new DataSource(dataSourceOptions(url(), 2)));
    await Promise.all(instances.map((ds) => ds.initialize()));
    try {
      await Promise.all(instances.map((ds) => runMigrationsLocked(ds)));
      const applied = await instances[0].query('SELECT name FROM migrations');
      const files = instances[0].migrations.map((m) => m.name);
      expect(applied.map((r: { name: string }) => r.name).sort()).toEqual([...files].sort());
      expect(await instances[0].showMigrations()).toBe(false);
    } finally {
      await Promise.all(instances.map((ds) => ds.destroy()));
    }
  });
});
