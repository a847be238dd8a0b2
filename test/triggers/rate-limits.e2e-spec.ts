import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { install } from '../support/agents';
import { expectError } from '../support/envelope';
import { bearer } from '../support/test-app';
import { MIB, triggerSpec } from './support';

/**
 * Inbound webhook triggers (issue 17, part 2): the hook's rate limits. They need apps of their own
 * (other HOOK_RATE_LIMIT_* settings), one per describe. The helpers the trigger specs share are in
 * ./support.
 */
describe('inbound webhook triggers: rate limits per trigger and per organization', () => {
  const a = triggerSpec({ HOOK_RATE_LIMIT_PER_TRIGGER: '3' });

  it('answers 429 RATE_LIMIT_EXCEEDED with Retry-After past HOOK_RATE_LIMIT_PER_TRIGGER; another trigger is not held back', async () => {
    const workflowId = await a.echo();
    const busy = await a.created(workflowId, { scheme: 'bearer' });
    const quiet = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 3; i++) a.accepted(await a.withBearer(busy, { i }), busy);
    const over = await a.withBearer(busy, { i: 3 });
    expectError(over, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await a.events(busy)).length).toBe(3);
    // The trigger's limit counts only authenticated requests: a wrong token is still 401.
    expectError(await a.withBearer(busy, { i: 4 }, {}, '', 'wrong token'), 401, 'UNAUTHORIZED');

    a.accepted(await a.withBearer(quiet, { i: 0 }), quiet);
    expect((await a.runsOf(workflowId)).filter((r) => r.triggeredBy.id === busy.id)).toHaveLength(3);
  });

  /** A new organization with a budget of 9 requests a minute, the transform plugin and a workflow (set up through its API: in the budget). */
  const budgeted = async () => {
    const t = a.t();
    const org = await t.newOrg('enterprise');
    const limit = await t.http().patch('/api/subscription').set(bearer(org.admin)).send({ rateLimitPerMinute: 9 });
    expect(limit.status).toBe(200);
    await install(t, org, 'transform');
    return { t, org, workflowId: await a.echo(org) };
  };

  it("counts hook requests in the organization's tier budget, with the same RateLimit headers", async () => {
    // The PATCH is the window's first request; with the four set-up requests, five of nine.
    const { t, org, workflowId } = await budgeted();
    // Two triggers taking turns, so neither reaches HOOK_RATE_LIMIT_PER_TRIGGER (3) first.
    const pair = [
      await a.created(workflowId, { scheme: 'bearer' }, org.admin),
      await a.created(workflowId, { scheme: 'bearer' }, org.admin),
    ];
    const answers: Response[] = [];
    for (let i = 0; i < 6; i++) answers.push(await a.withBearer(pair[i % 2], { i }));
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202, 202, 429, 429]);
    expect(answers[0].headers['ratelimit-policy']).toBe('"enterprise";q=9;w=60');
    expectError(answers[4], 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(answers[4].headers['retry-after'])).toBeGreaterThan(0);
    // The same counter: the organization's API calls are held back too.
    expect((await t.http().get('/api/workflows').set(bearer(org.viewer))).status).toBe(429);
  });

  it("refuses a stranger's requests without spending the trigger's or the organization's budget, and without its limits' headers", async () => {
    const { t, org, workflowId } = await budgeted();
    const trigger = await a.created(workflowId, { scheme: 'bearer' }, org.admin);
    // Far past the trigger's limit (3) and the organization's budget (9 a minute).
    const forged = await Promise.all(Array.from({ length: 40 }, (_, i) => a.withBearer(trigger, { i }, {}, '', 'wrong token')));
    for (const answer of forged) {
      expectError(answer, 401, 'UNAUTHORIZED');
      expect(Object.keys(answer.headers).filter((name) => /ratelimit/i.test(name))).toEqual([]);
    }
    // The organization's own API and the sender that holds the secret are not held back.
    expect((await t.http().get('/api/workflows').set(bearer(org.admin))).status).toBe(200);
    const real = await a.withBearer(trigger, { i: 'real' });
    a.accepted(real, trigger);
    expect(real.headers['ratelimit-policy']).toBe('"enterprise";q=9;w=60');
    expect((await a.events(trigger, org.viewer)).length).toBe(1);
  });
});

describe('inbound webhook triggers: rate limit per source', () => {
  const a = triggerSpec({ HOOK_RATE_LIMIT_PER_SOURCE: '5' });

  it('answers 429 past HOOK_RATE_LIMIT_PER_SOURCE from one address, first of all checks; the admin API is not held back', async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 3; i++) a.accepted(await a.withBearer(trigger, { i }), trigger);
    expectError(await a.hook(randomUUID(), '{}'), 404, 'TRIGGER_NOT_FOUND');
    expectError(await a.withBearer(trigger, { i: 'wrong' }, {}, '', 'wrong token'), 401, 'UNAUTHORIZED');
    // Six from this address: the limit holds whatever the trigger, even one that does not exist.
    const over = await a.withBearer(trigger, { i: 5 });
    expectError(over, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expectError(await a.hook(randomUUID(), '{}'), 429, 'RATE_LIMIT_EXCEEDED');
    // Claiming another address does not help without TRUST_PROXY.
    expectError(await a.withBearer(trigger, { i: 6 }, { 'X-Forwarded-For': '198.51.100.7' }), 429, 'RATE_LIMIT_EXCEEDED');
    expect(await a.runsOf(workflowId)).toHaveLength(3);
    expect((await a.list(workflowId)).status).toBe(200);
  });

  it('checks the source before the size: a body over 1 MiB from a source over its limit is 429, not 413', async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    // This address is at its limit (the spec before used it up) or gets there now.
    let answer = await a.withBearer(trigger, { i: 0 });
    for (let i = 1; answer.status !== 429 && i < 10; i++) answer = await a.withBearer(trigger, { i });
    expectError(answer, 429, 'RATE_LIMIT_EXCEEDED');
    const big = await a.hook(trigger, Buffer.alloc(MIB + 1, 0x61), {
      'Content-Type': 'text/plain',
      Authorization: `Bearer ${trigger.secret}`,
    });
    expectError(big, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(big.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('inbound webhook triggers: RATE_LIMIT_ENABLED=false', () => {
  const a = triggerSpec({ RATE_LIMIT_ENABLED: 'false', HOOK_RATE_LIMIT_PER_TRIGGER: '1', HOOK_RATE_LIMIT_PER_SOURCE: '1' });

  it("switches the hook's limits off too", async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 4; i++) a.accepted(await a.withBearer(trigger, { i }), trigger);
    expect(await a.runsOf(workflowId)).toHaveLength(4);
  });
});
