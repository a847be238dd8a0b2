import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { runMigrationsLocked } from '../../src/database/migrator';
import { eventually } from '../support/eventually';

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

  it('lets a CREATE INDEX CONCURRENTLY migration finish while another instance waits for the lock', async () => {
    // The instance waiting for the lock must hold no snapshot meanwhile: the index build waits
    // for every snapshot older than itself, and this one would wait for the build.
    const waiting = new DataSource({ ...dataSourceOptions(url(), 2), migrations: [] });
    let second: Promise<unknown> | undefined;
    class Table1900000000000 implements MigrationInterface {
      async up(runner: QueryRunner) {
        await runner.query(`CREATE TABLE "cic_probe" ("n" integer NOT NULL)`);
        await runner.query(`INSERT INTO "cic_probe" SELECT generate_series(1, 1000)`);
      }
      async down() {}
    }
    class Index1900000000001 implements MigrationInterface {
      transaction = false;
      async up(runner: QueryRunner) {
        second = runMigrationsLocked(waiting);
        await eventually(
          async () =>
            (
              await runner.query(
                `SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%advisory_lock%' AND query NOT LIKE '%pg_stat_activity%'`,
              )
            ).length > 0,
          { timeoutMs: 10_000, intervalMs: 20, message: 'the second instance asking for the lock' },
        );
        await runner.query(`CREATE INDEX CONCURRENTLY "cic_probe_n_idx" ON "cic_probe" ("n")`);
      }
      async down() {}
    }
    const first = new DataSource({ ...dataSourceOptions(url(), 2), migrations: [Table1900000000000, Index1900000000001] });
    await Promise.all([first.initialize(), waiting.initialize()]);
    try {
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('stuck'), 15_000)));
      const done = runMigrationsLocked(first)
        .then(() => second)
        .then(() => 'done');
      expect(await Promise.race([done, stuck])).toBe('done');
      clearTimeout(timer);
      const [index] = await first.query(`SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = '"cic_probe_n_idx"'::regclass`);
      expect(index).toEqual({ indisvalid: true });
    } finally {
      await Promise.all([first.destroy(), waiting.destroy()]);
    }
  }, 30_000);
});
