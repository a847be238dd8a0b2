import { DataSource, QueryRunner } from 'typeorm';

/** Arbitrary but fixed: every instance of the service takes the same lock. */
const MIGRATION_LOCK_KEY = 728_394_001;
/** How often an instance waiting for another one's migrations asks for the lock again. */
const LOCK_POLL_MS = 200;

/**
 * Takes the lock by asking again until it is free rather than with a blocking
 * pg_advisory_lock(): a session blocked in that statement holds a snapshot for as long as it
 * waits, and CREATE INDEX CONCURRENTLY in the running migration waits for every such snapshot,
 * so the instances started next to the migrating one would hold it up for good.
 */
async function acquire(runner: QueryRunner): Promise<void> {
  for (;;) {
    const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [MIGRATION_LOCK_KEY])) as Array<{
      locked: boolean;
    }>;
    if (locked) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/**
 * Runs pending migrations while holding a Postgres advisory lock, so two instances starting
 * at once apply them one after the other instead of racing. `lock: false` is for a single
 * session (PGlite), where advisory locks exclude nothing and the one connection is the pool.
 * Answers the names of the migrations it ran.
 */
export async function runMigrationsLocked(
  dataSource: DataSource,
  options: { lock?: boolean; afterMigrations?: () => Promise<void> } = {},
): Promise<string[]> {
  const { lock = true, afterMigrations } = options;
  if (!lock) {
    const ran = await dataSource.runMigrations({ transaction: 'each' });
    await afterMigrations?.();
    return ran.map((migration) => migration.name);
  }
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await acquire(runner);
    try {
      const ran = await dataSource.runMigrations({ transaction: 'each' });
      await afterMigrations?.();
      return ran.map((migration) => migration.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
