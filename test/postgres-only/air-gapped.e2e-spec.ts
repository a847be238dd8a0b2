import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ServiceProcess, startService } from '../support/service-process';
import { inLoopbackOnlyNamespace, LoopbackOnly, loopbackOnly } from '../support/loopback-only';
import { createTestApp, PASSWORD, TestOrg } from '../support/test-app';

/**
 * Air-gapped sites: the service needs nothing from the internet at run time. It runs here in a
 * network namespace whose only interface is loopback (test/support/loopback-only.ts), reaching
 * the database only through a bridge to the test's Postgres, and must become ready and serve a
 * login, without attempting any connection or DNS lookup beyond loopback.
 */
describe('air-gapped: the service with no network but loopback', () => {
  let org: TestOrg;
  let ns: LoopbackOnly;
  let service: ServiceProcess;
  let base: string;

  beforeAll(async () => {
    // The user to log in as, written by the test's own app.
    const t = await createTestApp();
    try {
      org = await t.newOrg();
    } finally {
      await t.close();
    }
    const database = new URL(process.env.DATABASE_URL!);
    expect(['127.0.0.1', 'localhost']).toContain(database.hostname);
    const port = await freePort();
    ns = await loopbackOnly(port, [Number(database.port || 5432)]);
    service = await startService(
      { NODE_OPTIONS: ns.nodeOptions, DATABASE_URL: database.toString().replace('localhost', '127.0.0.1') },
      { port, wrap: ns.wrap, captureOutput: true },
    );
    base = `http://127.0.0.1:${port}`;
  }, 90_000);
  afterAll(async () => {
    await service?.kill('SIGTERM');
    await ns?.close();
  });

  it('runs in a namespace where only loopback exists', async () => {
    const links = await inLoopbackOnlyNamespace('ip -o link show');
    expect(
      links
        .trim()
        .split('\n')
        .map((line) => line.split(':')[1].trim()),
    ).toEqual(['lo']);
    // A documentation address (TEST-NET-1) is refused at once, there is no route; a name does
    // not resolve. The recorder the service runs with sees both attempts.
    const dir = mkdtempSync(join(tmpdir(), 'air-gapped-'));
    try {
      const log = join(dir, 'attempts.log');
      const probe = await inLoopbackOnlyNamespace(
        `"${process.execPath}" -e "` +
          `require('node:net').connect(80, '192.0.2.1').on('error', (e) => console.log('connect', e.code)); ` +
          `require('node:dns').lookup('example.com', (e) => console.log('lookup', e ? 'failed' : 'resolved'))"`,
        { NODE_OPTIONS: ns.nodeOptions, OUTBOUND_ATTEMPTS_LOG: log },
      );
      expect(probe.trim().split('\n').sort()).toEqual(['connect ENETUNREACH', 'lookup failed']);
      expect(readFileSync(log, 'utf8').trim().split('\n').sort()).toEqual(['connect 192.0.2.1:80', 'lookup example.com']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is ready and serves a login, attempting nothing beyond loopback', async () => {
    const ready = await fetch(`${base}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, queue: { status: 'up' } } });

    const login = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: org.admin.email, password: PASSWORD }),
    });
    expect(login.status).toBe(200);
    const { accessToken } = (await login.json()) as { accessToken: string };
    const me = await fetch(`${base}/api/auth/me`, { headers: { Authorization: `Bearer ${accessToken}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ user: { email: org.admin.email } });

    expect(ns.recorderLoaded()).toBe(true);
    expect(ns.outboundAttempts()).toEqual([]);
    expect(service.alive()).toBe(true);
  });
});
