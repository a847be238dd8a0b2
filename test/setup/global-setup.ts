import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from '@jest/types';
import { Client } from 'pg';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres';
import { generateLicenseKeyPair, issueLicense } from '../../src/modules/licensing/application/license-issuer';
import { WORKER_DATABASES } from './worker-database';

/**
 * The specs that run the service or the CLI as processes of their own run the build in dist/
 * (test/support/service-process.ts `entryPoint`): bring it up to date first. Nothing to do when
 * no source changed since the last build; about 10 s when one did.
 */
function buildIfStale(): void {
  const root = join(__dirname, '../..');
  const build = spawnSync(process.execPath, [join(root, 'scripts/build-if-stale.mjs')], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.status !== 0) throw new Error(`scripts/build-if-stale.mjs failed (exit ${build.status ?? build.signal})`);
}

/**
 * Every Jest worker gets a database of its own, so spec files run side by side without seeing
 * each other's rows or jobs: fresh ones created on the server DATABASE_URL names (and dropped
 * afterwards), or, with no DATABASE_URL, one in-memory embedded PGlite per worker (PGlite is one
 * session, so two workers on one would wait on each other). `worker-database.ts` points each
 * worker at its own. Tests never touch a developer's data nor what an earlier run left behind.
 */
export default async function globalSetup(globalConfig: Config.GlobalConfig): Promise<void> {
  buildIfStale();
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
  // In band (`-i`, or one spec file) Jest runs the specs in this process, as worker 1.
  const workers = Math.max(1, globalConfig.maxWorkers);
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await Promise.all(Array.from({ length: workers }, () => EmbeddedPostgres.start(null, 40)));
    globalThis.__EMBEDDED__ = embedded;
    process.env[WORKER_DATABASES] = JSON.stringify(embedded.map(({ url }) => ({ url })));
    process.env.TEST_DATABASE_MODE = 'embedded';
    return;
  }
  const prefix = `platform_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const names = Array.from({ length: workers }, (_, index) => `${prefix}_w${index + 1}`);
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  for (const name of names) await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const urlOf = (name: string) => {
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
  process.env.TEST_SERVER_DATABASE_URL = serverUrl;
  process.env[WORKER_DATABASES] = JSON.stringify(names.map((name) => ({ url: urlOf(name), name })));
  process.env.TEST_DATABASE_MODE = 'postgres';
}

declare global {
  var __EMBEDDED__: EmbeddedPostgres[] | undefined;
}
