import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres';
import { generateLicenseKeyPair, issueLicense } from '../../src/modules/licensing/application/license-issuer';

/**
 * Every run gets a database of its own: a fresh one created on the server DATABASE_URL
 * names (and dropped afterwards), or, with no DATABASE_URL, an in-memory embedded PGlite.
 * Tests never touch a developer's data nor what an earlier run left behind.
 */
export default async function globalSetup(): Promise<void> {
  process.env.NODE_ENV = 'test';
  process.env.JWT_SECRET ??= randomBytes(32).toString('hex');
  process.env.LOG_LEVEL ??= 'silent';
  process.env.DATA_DIR ??= `/tmp/platform-test-${process.pid}`;
  process.env.METRICS_TOKEN ??= randomBytes(24).toString('hex');
  // A throwaway vendor key and an enterprise license with room to spare: every test app boots
  // licensed; the license specs issue their own licenses with TEST_LICENSE_PRIVATE_KEY.
  const vendor = generateLicenseKeyPair();
  process.env.TEST_LICENSE_PRIVATE_KEY = vendor.privateKeyPem;
  process.env.LICENSE_PUBLIC_KEYS = vendor.publicKeyBase64;
  process.env.LICENSE_KEY = await issueLicense(
    { customer: 'test suite', tier: 'enterprise', seats: 1_000_000, days: 30, maxRateLimitPerMinute: 100_000 },
    vendor.privateKeyPem,
  );
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await EmbeddedPostgres.start(null, 40);
    globalThis.__EMBEDDED__ = embedded;
    process.env.DATABASE_URL = embedded.url;
    process.env.TEST_DATABASE_MODE = 'embedded';
    return;
  }
  const name = `platform_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  process.env.TEST_SERVER_DATABASE_URL = serverUrl;
  process.env.TEST_DATABASE_NAME = name;
  process.env.DATABASE_URL = url.toString();
  process.env.TEST_DATABASE_MODE = 'postgres';
}

declare global {
  var __EMBEDDED__: EmbeddedPostgres | undefined;
}
