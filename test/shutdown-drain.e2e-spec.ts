import { ShutdownDrain } from '../src/modules/operations/shutdown-drain';
import { bearer, createTestApp, TestApp } from './support/test-app';

/**
 * The drain a SIGTERM starts on an API process (test/postgres-only/rolling-restart.e2e-spec.ts
 * runs it for real, behind Caddy): readiness off, everything else still served.
 */
describe('shutdown drain', () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp({ env: { SHUTDOWN_DRAIN_MS: '0' } })));
  afterAll(() => t.close());

  it('answers /health/ready 503 and keeps serving every other request, closing each connection', async () => {
    const org = await t.newOrg();
    const keepAlive = { ...bearer(org.member), Connection: 'keep-alive' };
    const before = await t.http().get('/api/auth/me').set(keepAlive);
    expect(before.status).toBe(200);
    expect(before.headers.connection).toBe('keep-alive');

    await t.app.get(ShutdownDrain).drain();

    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({
      error: { code: 'SERVICE_UNAVAILABLE', message: 'Shutting down: send new requests to another replica', status: 503 },
    });
    const me = await t.http().get('/api/auth/me').set(keepAlive);
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(org.member.id);
    expect(me.headers.connection).toBe('close');
    expect((await t.http().get('/health/live')).status).toBe(200);
  });
});
