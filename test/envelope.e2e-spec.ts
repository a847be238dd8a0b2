import { Controller, Get } from '@nestjs/common';
import { Public } from '../src/shared/auth/access.decorators';
import { startTcpProxy } from './support/tcp-proxy';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

@Controller('test')
class FaultyController {
  @Get('boom')
  @Public()
  boom(): never {
    throw new Error('secret internal detail SELECT * FROM users');
  }
}

function expectEnvelope(body: unknown, code: string, status: number) {
  expect(body).toEqual({ error: expect.objectContaining({ code, status, message: expect.any(String) }) });
}

describe('error envelope', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ controllers: [FaultyController] });
    org = await t.newOrg();
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 NOT_FOUND', async () => {
    const res = await t.http().get('/api/nothing-here').set(bearer(org.admin));
    expect(res.status).toBe(404);
    expectEnvelope(res.body, 'NOT_FOUND', 404);
  });

  it('answers an unknown route without a token with 404 too', async () => {
    const res = await t.http().get('/nothing-here');
    expect(res.status).toBe(404);
    expectEnvelope(res.body, 'NOT_FOUND', 404);
  });

  it('answers malformed JSON with 400 VALIDATION_FAILED', async () => {
    const res = await t.http().post('/api/auth/login').set('Content-Type', 'application/json').send('{"email": "a@b.c",');
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_FAILED', 400);
  });

  it('lists every validation failure in details', async () => {
    const res = await t.http().post('/api/users').set(bearer(org.admin)).send({ email: 'not-an-email', password: 'short', role: 'owner' });
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_FAILED', 400);
    const paths = res.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['email', 'password', 'role']));
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const big = JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(1024 * 1024 + 10) });
    const res = await t.http().post('/api/auth/login').set('Content-Type', 'application/json').send(big);
    expect(res.status).toBe(413);
    expectEnvelope(res.body, 'PAYLOAD_TOO_LARGE', 413);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const res = await t.http().post('/api/auth/login').set('Content-Type', 'text/plain').send('email=a@b.c');
    expect(res.status).toBe(415);
    expectEnvelope(res.body, 'UNSUPPORTED_MEDIA_TYPE', 415);
  });

  it('refuses a form-encoded body with 415', async () => {
    const res = await t.http().post('/api/auth/login').type('form').send({ email: 'a@b.c', password: 'x' });
    expect(res.status).toBe(415);
    expectEnvelope(res.body, 'UNSUPPORTED_MEDIA_TYPE', 415);
  });

  it('refuses JSON nested 10,000 levels deep with 400, not a crash', async () => {
    const deep = '{"a":'.repeat(10000) + '1' + '}'.repeat(10000);
    const res = await t.http().post('/api/users').set(bearer(org.admin)).set('Content-Type', 'application/json').send(deep);
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'VALIDATION_FAILED', 400);
    const ok = await t.http().get('/health/live');
    expect(ok.status).toBe(200);
  });

  it('answers an uncaught error with 500 INTERNAL_ERROR and leaks nothing', async () => {
    const res = await t.http().get('/test/boom').set('X-Request-Id', 'req-boom-1');
    expect(res.status).toBe(500);
    expectEnvelope(res.body, 'INTERNAL_ERROR', 500);
    expect(JSON.stringify(res.body)).not.toMatch(/SELECT|secret internal|at .*\.ts/);
    expect(res.body.error.message).toContain('req-boom-1');
    expect(res.headers['x-request-id']).toBe('req-boom-1');
  });
});

describe('database unreachable', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After, then recovers', async () => {
    const proxy = await startTcpProxy(process.env.DATABASE_URL!);
    const t = await createTestApp({ env: { DATABASE_URL: proxy.url } });
    try {
      const org = await t.newOrg();
      expect((await t.http().get('/api/auth/me').set(bearer(org.admin))).status).toBe(200);

      proxy.cut();
      const res = await t.http().get('/api/auth/me').set(bearer(org.admin));
      expect(res.status).toBe(503);
      expectEnvelope(res.body, 'SERVICE_UNAVAILABLE', 503);
      expect(res.headers['retry-after']).toBeDefined();
      const ready = await t.http().get('/health/ready');
      expect(ready.status).toBe(503);
      expectEnvelope(ready.body, 'SERVICE_UNAVAILABLE', 503);

      proxy.restore();
      const again = await t.http().get('/api/auth/me').set(bearer(org.admin));
      expect(again.status).toBe(200);
    } finally {
      proxy.restore();
      await t.close();
      await proxy.close();
    }
  });
});
