import type { Response } from 'supertest';
import { burst, statuses } from '../support/bursts';
import { startTcpProxy } from '../support/tcp-proxy';
import { bearer, createTestApp, scrapeMetrics } from '../support/test-app';

/**
 * Rate limits counted in a real Redis: two instances share one budget, and while Redis is away
 * each instance counts in its own memory (the service keeps serving, and the limits still hold).
 * jest.config.js runs these only when Redis answers (or REDIS_URL is set) and hands its URL over
 * as TEST_REDIS_URL.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('rate limits (Redis storage)', () => {
  it('counts two instances together: exactly 100 of 101 alternating requests pass', async () => {
    // A loaded machine can pause this process (two apps and jest) past the default 1 s command
    // timeout, and a late counter is counted in one instance's memory: the next test's case.
    const env = { REDIS_URL, REDIS_COMMAND_TIMEOUT_MS: '15000' };
    const first = await createTestApp({ env });
    const org = await first.newOrg('starter');
    const second = await createTestApp({ env });
    try {
      const apps = [first, second];
      const responses: Response[] = [];
      for (let i = 0; i < 101; i++) responses.push(await apps[i % 2].http().get('/api/plugins').set(bearer(org.member)));
      const fallbacks = await Promise.all(
        apps.map(async (app) => /rate_limit_storage_errors_total (\d+)/.exec((await scrapeMetrics(app)).text)?.[1]),
      );
      expect(fallbacks).toEqual(['0', '0']);
      expect(statuses(responses)).toEqual({ ok: 100, limited: 1 });
      expect(responses[100].status).toBe(429);
      expect(responses[100].headers['retry-after']).toBeDefined();
    } finally {
      await second.close();
      await first.close();
    }
    // Two app boots and 101 requests in a row: more than the default 30 s on a loaded machine.
  }, 90_000);

  it('keeps serving when Redis is unreachable, counting in memory, and counts the failures', async () => {
    const proxy = await startTcpProxy(REDIS_URL);
    const t = await createTestApp({ env: { REDIS_URL: proxy.url.replace(/^postgres:/, 'redis:') } });
    try {
      const org = await t.newOrg('starter');
      expect((await t.http().get('/api/plugins').set(bearer(org.member))).headers['x-ratelimit-remaining']).toBe('99');
      proxy.cut();
      const during = await burst(() => t.http().get('/api/plugins').set(bearer(org.member)), 20);
      expect(statuses(during)).toEqual({ ok: 20, limited: 0 });
      const metrics = await scrapeMetrics(t);
      expect(Number(/rate_limit_storage_errors_total (\d+)/.exec(metrics.text)?.[1])).toBeGreaterThanOrEqual(20);
    } finally {
      proxy.restore();
      await t.close();
      await proxy.close();
    }
  });

  it('still limits logins per address while Redis is unreachable: past LOGIN_LIMIT_PER_IP, 429 (issue 24)', async () => {
    const proxy = await startTcpProxy(REDIS_URL);
    const t = await createTestApp({ env: { REDIS_URL: proxy.url, LOGIN_LIMIT_PER_IP: '3' } });
    try {
      proxy.cut();
      const attempts: Response[] = [];
      for (let i = 0; i < 5; i++) {
        attempts.push(
          await t
            .http()
            .post('/api/auth/login')
            .send({ email: `nobody-${i}-${Date.now()}@test.example`, password: 'whatever it is' }),
        );
      }
      expect(attempts.map((r) => r.status)).toEqual([401, 401, 401, 429, 429]);
      expect(attempts[3].body).toEqual({ error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String), status: 429 } });
      expect(Number(attempts[3].headers['retry-after'])).toBeGreaterThan(0);
      const metrics = await scrapeMetrics(t);
      expect(Number(/rate_limit_storage_errors_total (\d+)/.exec(metrics.text)?.[1])).toBeGreaterThanOrEqual(4);
    } finally {
      proxy.restore();
      await t.close();
      await proxy.close();
    }
  });
});
