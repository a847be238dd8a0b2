import { burst, statuses } from './support/bursts';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

/**
 * Tier rate limits. Each spec uses fresh organizations, whose window starts at their first
 * request, and stays well inside 60 s, so no spec straddles a window boundary. The counts
 * shared across instances through Redis are in test/redis-only/.
 */

describe('tier rate limits (memory storage)', () => {
  let t: TestApp;
  let operator: TestUser;
  beforeAll(async () => {
    t = await createTestApp();
    const ops = await t.newOrg();
    operator = await t.addUser(ops.id, 'admin', { isOperator: true });
  });
  afterAll(() => t.close());

  const get = (user: TestUser) => () => t.http().get('/api/plugins').set(bearer(user));

  it('starter: exactly 100 of 101 requests pass; the 101st gets the 429 envelope, Retry-After and headers', async () => {
    const org = await t.newOrg('starter');
    const responses = await burst(get(org.member), 100);
    expect(statuses(responses)).toEqual({ ok: 100, limited: 0 });
    const first = responses[0];
    expect(first.headers['ratelimit-policy']).toBe('"starter";q=100;w=60');
    expect(first.headers['ratelimit']).toMatch(/^"starter";r=\d+;t=\d+$/);
    expect(first.headers['x-ratelimit-limit']).toBe('100');
    expect(Object.keys(first.headers).filter((h) => /ratelimit-.*-/.test(h))).toEqual([]);

    const over = await get(org.admin)();
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.stringContaining('starter'), status: 429 } });
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    expect(over.headers['ratelimit']).toBe(`"starter";r=0;t=${retryAfter}`);
  });

  it('team: exactly 500 of 501 pass', async () => {
    const org = await t.newOrg('team');
    const responses = await burst(get(org.viewer), 501, 25);
    expect(statuses(responses)).toEqual({ ok: 500, limited: 1 });
    expect(responses[0].headers['ratelimit-policy']).toBe('"team";q=500;w=60');
  });

  it('enterprise: the limit its admin configured, within the license', async () => {
    const org = await t.newOrg('enterprise');
    const patch = await t.http().patch('/api/subscription').set(bearer(org.admin)).send({ rateLimitPerMinute: 30 });
    expect(patch.status).toBe(200);
    expect(patch.body.rateLimit).toEqual({ tier: 'enterprise', limit: 30, windowSeconds: 60 });
    // The PATCH was the window's first request.
    const responses = await burst(get(org.member), 30);
    expect(statuses(responses)).toEqual({ ok: 29, limited: 1 });
    expect(responses[0].headers['ratelimit-policy']).toBe('"enterprise";q=30;w=60');

    const tooHigh = await t.newOrg('enterprise');
    const refused = await t.http().patch('/api/subscription').set(bearer(tooHigh.admin)).send({ rateLimitPerMinute: 100_001 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].path).toBe('rateLimitPerMinute');
    const starter = await t.newOrg('starter');
    const notEnterprise = await t.http().patch('/api/subscription').set(bearer(starter.admin)).send({ rateLimitPerMinute: 50 });
    expect(notEnterprise.status).toBe(403);
    expect(notEnterprise.body.error.code).toBe('FEATURE_NOT_AVAILABLE');
    expect((await t.http().patch('/api/subscription').set(bearer(tooHigh.member)).send({ rateLimitPerMinute: 50 })).status).toBe(403);
  });

  it('counts per organization: users share one budget, two organizations behind one IP never do', async () => {
    const [a, b]: TestOrg[] = [await t.newOrg('starter'), await t.newOrg('starter')];
    const shared = await burst(
      () =>
        t
          .http()
          .get('/api/plugins')
          .set(bearer([a.admin, a.member, a.viewer][Math.floor(Math.random() * 3)])),
      100,
    );
    expect(statuses(shared)).toEqual({ ok: 100, limited: 0 });
    expect((await get(a.viewer)()).status).toBe(429);
    const other = await get(b.viewer)();
    expect(other.status).toBe(200);
    expect(other.headers['x-ratelimit-remaining']).toBe('99');
  });

  it('applies a tier change at once', async () => {
    const org = await t.newOrg('starter');
    await burst(get(org.member), 100);
    expect((await get(org.member)()).status).toBe(429);
    const raised = await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ tier: 'team' });
    expect(raised.status).toBe(200);
    const after = await get(org.member)();
    expect(after.status).toBe(200);
    expect(after.headers['ratelimit-policy']).toBe('"team";q=500;w=60');
  });

  it('leaves unauthenticated routes to their own limits', async () => {
    const res = await t.http().get('/health/live');
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });
});
