import { Client } from 'pg';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__EMBEDDED__?.stop();
  const name = process.env.TEST_DATABASE_NAME;
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL;
  if (!name || !serverUrl) return;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
