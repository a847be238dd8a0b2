/**
 * Run before each spec file (the e2e project's `setupFiles`): points DATABASE_URL, and on a
 * PostgreSQL server TEST_DATABASE_NAME, at the database global setup made for this Jest worker.
 * A worker that Jest replaces (its memory limit) keeps its JEST_WORKER_ID, so its database.
 */
export const WORKER_DATABASES = 'TEST_WORKER_DATABASES';

export interface WorkerDatabase {
  url: string;
  /** The database's name on the server; absent for embedded PGlite. */
  name?: string;
}

const listed = process.env[WORKER_DATABASES];
if (listed) {
  const databases = JSON.parse(listed) as WorkerDatabase[];
  const database = databases[(Number(process.env.JEST_WORKER_ID ?? '1') - 1) % databases.length];
  process.env.DATABASE_URL = database.url;
  if (database.name) process.env.TEST_DATABASE_NAME = database.name;
}
