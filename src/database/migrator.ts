import { DataSource } from 'typeorm';

/** Arbitrary but fixed: every instance of the service takes the same lock. */
const MIGRATION_LOCK_KEY = 728_394_001;

/**
 * Runs pending migrations while holding a Postgres advisory lock, so two instances starting
 * at once apply them one after the other instead of racing. `lock: false` is for a single
 * session (PGlite), where advisory locks exclude nothing and the one connection is the pool.
 */
export async function runMigrationsLocked(
  dataSource: DataSource,
  options: { lock?: boolean; afterMigrations?: () => Promise<void> } = {},
): Promise<void> {
  const { lock = true, afterMigrations } = options;
  if (!lock) {
    await dataSource.runMigrations({ transaction: 'each' });
    return afterMigrations?.();
  }
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      await afterMigrations?.();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
