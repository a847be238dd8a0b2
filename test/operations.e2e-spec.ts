import { bearer, createTestApp, scrapeMetrics, TestApp } from './support/test-app';

describe('operations', () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp()));
  afterAll(() => t.close());

  it('answers liveness and readiness', async () => {
    expect((await t.http().get('/health/live')).body).toEqual({ status: 'ok' });
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, queue: { status: 'up' } } });
  });

  it('puts a request id on every response and echoes the client one', async () => {
    const made = await t.http().get('/health/live');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await t.http().get('/api/users').set('X-Request-Id', 'abc-123');
    expect(echoed.status).toBe(401);
    expect(echoed.headers['x-request-id']).toBe('abc-123');
    const hostile = await t.http().get('/health/live').set('X-Request-Id', 'bad id\twith spaces');
    expect(hostile.headers['x-request-id']).not.toContain(' ');
  });

  it('sets helmet security headers', async () => {
    const res = await t.http().get('/health/live');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['strict-transport-security']).toBeDefined();
  });

  it('exposes request counts and latencies by route and status', async () => {
    const org = await t.newOrg();
    await t.http().get(`/api/users/${org.member.id}`).set(bearer(org.admin)).expect(200);
    await t.http().get('/api/no-such-route').expect(404);
    const res = await scrapeMetrics(t);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.text).toMatch(/http_requests_total\{method="GET",route="\/api\/users\/:id",status="200"\} \d+/);
    expect(res.text).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"\} \d+/);
    expect(res.text).toMatch(/http_request_duration_seconds_bucket\{le="0.05",method="GET",route="\/api\/users\/:id",status="200"\} \d+/);
  });

  it('serves /metrics only with the METRICS_TOKEN, and not at all without one', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-of-some-length', `Basic ${process.env.METRICS_TOKEN}`]) {
      const req = t.http().get('/metrics');
      const res = await (authorization ? req.set('Authorization', authorization) : req);
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
      expect(res.text).not.toContain('http_requests_total');
    }
    const off = await createTestApp({ env: { METRICS_TOKEN: undefined } });
    try {
      const res = await off.http().get('/metrics');
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    } finally {
      await off.close();
    }
  });

  it('serves the OpenAPI document with every route and the error envelope', async () => {
    const res = await t.http().get('/api/docs-json');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/api/auth/login', '/api/users/{id}', '/api/organizations']));
    expect(res.body.components.schemas.ErrorEnvelopeDto).toBeDefined();
    expect(res.body.paths['/api/users/{id}'].get.responses['404']).toBeDefined();
    // The error catalog is a page of its own, linked from the description.
    expect(res.body.info.description).toContain('/api/docs/errors');
    expect((await t.http().get('/api/docs/errors')).text).toContain('PLUGIN_NOT_FOUND');
  });
});
