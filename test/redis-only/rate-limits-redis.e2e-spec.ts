import type { Response } from 'supertest';
import { burst, statuses } from '../support/bursts';
import { startTcpProxy } from '../support/tcp-proxy';
import { bearer, createTestApp, scrapeMetrics } from '../support/test-app';

/**
 * Tier rate limits counted in a real Redis: two instances share one budget, and a Redis that
 * goes away fails open. jest.config.js runs these only when Redis answers (or REDIS_URL is set)
 * and hands its URL over as TEST_REDIS_URL.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('tier rate limits (Redis storage)', () => {
  it('counts two instances together: exactly 100 of 101 alternating requests pass', async () => {
    const first = await createTestApp({ env: { REDIS_URL } });
    const org = await first.newOrg('starter');
    const second = await createTestApp({ env: { REDIS_URL } });
    try {
      const apps = [first, second];
      const responses: Response[] = [];
      for (let i = 0; i < 101; i++) responses.push(await apps[i % 2].http().get('/api/plugins').set(bearer(org.member)));
      expect(statuses(responses)).toEqual({ ok: 100, limited: 1 });
      expect(responses[100].status).toBe(429);
      expect(responses[100].headers['retry-after']).toBeDefined();
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('keeps serving when Redis is unreachable, and counts the failures', async () => {
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
});
