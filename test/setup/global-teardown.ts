import { Client } from 'pg';
import { WORKER_DATABASES, type WorkerDatabase } from './worker-database';

export default async function globalTeardown(): Promise<void> {
  await Promise.all((globalThis.__EMBEDDED__ ?? []).map((embedded) => embedded.stop()));
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL;
  if (!serverUrl) return;
  const databases = JSON.parse(process.env[WORKER_DATABASES] ?? '[]') as WorkerDatabase[];
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  for (const { name } of databases) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
