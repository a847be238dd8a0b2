import { install, registerAgent } from './support/agents';
import { answer, FakeLlm, startFakeLlm } from './support/fake-llm';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * Tenant code as a hostile admin writes it: expressions that sort, allocate or backtrack for
 * seconds, schemas with catastrophic patterns, an LLM that answers with a pathological fence.
 * Each must end as a clear failure of that one execution or run, while the service keeps
 * answering everyone else (its liveness is polled during the attack) and the next normal
 * execution succeeds.
 */
describe('tenant code in the sandbox', () => {
  let t: TestApp;
  let org: TestOrg;
  let llm: FakeLlm;
  let normal: string;

  beforeAll(async () => {
    llm = await startFakeLlm(answer('```' + '\n'.repeat(200_000)));
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'm' });
    normal = await transformAgent('{ "doubled": n * 2 }');
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });

  const transformAgent = (expression: string, extra: Record<string, unknown> = {}) =>
    registerAgent(t, org, { kind: 'transform.jsonata', config: { expression }, maxAttempts: 3, ...extra });
  const execute = (agentId: string, input: unknown) =>
    t.http().post(`/api/agents/${agentId}/execute?wait=30`).set(bearer(org.member)).send({ input });

  /** Runs `work` while polling /health/live every 25 ms; answers its result and the slowest poll. */
  async function whilePolled<T>(work: () => Promise<T>): Promise<{ result: T; slowestLiveMs: number; polls: number }> {
    let done = false;
    let slowest = 0;
    let polls = 0;
    const poller = (async () => {
      while (!done) {
        const started = Date.now();
        const res = await t.http().get('/health/live');
        expect(res.status).toBe(200);
        slowest = Math.max(slowest, Date.now() - started);
        polls++;
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    try {
      const result = await work();
      return { result, slowestLiveMs: slowest, polls };
    } finally {
      done = true;
      await poller;
    }
  }

  async function expectNormalExecutionSucceeds(): Promise<void> {
    const res = await execute(normal, { n: 21 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', output: { doubled: 42 } });
  }

  it.each([
    ['an allocation bomb', '$count($sort([1..100000]))', /memory limit of 128 MB|did not finish within 1000 ms/],
    ['a $sort of 30,000 that never yields', '$sort([1..30000])', /memory limit of 128 MB|did not finish within 1000 ms/],
    ['an endless loop', '( $f := function($n){ $f($n + 1) }; $f(0) )', /did not finish within 1000 ms/],
    ['a 10^8-element range', '$count([1..100000000])', /must not exceed/],
    ['a $pad of 500 million', '$pad("", 500000000, "x")', /\$pad width 500000000 is over the limit/],
    ['a backtracking regex through $eval', '$eval("$contains(text, /^(a+)+(?=b)/)")', /unsupported Perl syntax/],
  ])('%s ends that execution as a final failure naming the limit, while the service answers', async (_what, expression, message) => {
    const agent = await transformAgent(expression);
    const { result: res, slowestLiveMs, polls } = await whilePolled(() => execute(agent, { text: 'a'.repeat(31) }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: expect.stringMatching(/^EXPRESSION_(FAILED|TIMEOUT)$/) },
    });
    expect(res.body.error.message).toMatch(message);
    expect(polls).toBeGreaterThan(0);
    expect(slowestLiveMs).toBeLessThan(200);
    await expectNormalExecutionSucceeds();
  });

  it('matches a catastrophic-looking regex RE2 can run in linear time', async () => {
    const agent = await transformAgent('$contains(text, /^(a+)+$/)');
    const res = await execute(agent, { text: `${'a'.repeat(5000)}!` });
    expect(res.body).toMatchObject({ status: 'succeeded', output: false });
  });

  it('refuses, when saved, an expression with a lookahead or a backreference, naming the path', async () => {
    for (const expression of ['$contains(text, /^(a+)+(?=b)/)', '$match(text, /(a)\\1/)']) {
      const res = await t
        .http()
        .post('/api/agents')
        .set(bearer(org.admin))
        .send({ name: 'x', kind: 'transform.jsonata', config: { expression } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', status: 400 });
      expect(res.body.error.details).toEqual([
        { path: 'config.expression', message: expect.stringContaining('linear-time engine') as unknown },
      ]);
    }
  });

  it('refuses, when saved, an inputSchema whose pattern RE2 cannot run, naming the path', async () => {
    const res = await t
      .http()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({
        name: 'x',
        kind: 'transform.jsonata',
        config: { expression: '$' },
        inputSchema: {
          type: 'object',
          properties: { name: { type: 'string', pattern: '^(a+)+(?=b)' } },
          patternProperties: { '(x)\\1': {} },
        },
      });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'inputSchema.patternProperties.(x)\\1',
      'inputSchema.properties.name.pattern',
    ]);
  });

  it("validates a member's input against a backtracking-prone pattern in linear time", async () => {
    const agent = await transformAgent('$', {
      inputSchema: { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } }, uniqueItems: false },
    });
    const { result: res, slowestLiveMs } = await whilePolled(() => execute(agent, { name: `${'a'.repeat(50_000)}!` }));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'input.name' }] });
    expect(slowestLiveMs).toBeLessThan(200);
  });

  it('checks uniqueItems over a large array of objects in linear time', async () => {
    const agent = await transformAgent('$count($)', { inputSchema: { type: 'array', uniqueItems: true } });
    const items = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tags: ['x'] }));
    const ok = await execute(agent, items);
    expect(ok.body).toMatchObject({ status: 'succeeded', output: 20_000 });
    const dup = await execute(agent, [...items, { tags: ['x'], id: 7 }]);
    expect(dup.status).toBe(400);
    expect(dup.body.error.details[0].message).toContain('must NOT have duplicate items');
  });

  it('an LLM reply of a fence and 200,000 newlines fails as INVALID_OUTPUT without stalling', async () => {
    const agent = await registerAgent(t, org, { kind: 'llm.chat', config: { promptTemplate: 'hi', output: 'json' }, maxAttempts: 1 });
    const { result: res, slowestLiveMs } = await whilePolled(() => execute(agent, {}));
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'INVALID_OUTPUT' } });
    expect(slowestLiveMs).toBeLessThan(200);
  });

  it('a workflow step whose input expression never yields fails the run once, final, and the next run succeeds', async () => {
    const define = (steps: unknown[]) => t.http().post('/api/workflows').set(bearer(org.admin)).send({ name: 'w', steps });
    const bomb = await define([
      { id: 'a', action: 'transform.jsonata', with: { expression: '$' }, input: '$sort([1..30000])', retry: { maxAttempts: 3 } },
    ]);
    expect(bomb.status).toBe(201);
    const { result: res, slowestLiveMs } = await whilePolled(() =>
      t.http().post(`/api/workflows/${bomb.body.id}/run?wait=30`).set(bearer(org.member)).send({ input: {} }),
    );
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'STEP_FAILED' } });
    const run = await t.http().get(`/api/workflows/${bomb.body.id}/runs/${res.body.id}`).set(bearer(org.viewer));
    // The input is evaluated before the step's first attempt: the step never ran, and is not retried.
    expect(run.body.steps[0]).toMatchObject({
      status: 'failed',
      attempts: 0,
      error: { code: expect.stringMatching(/^EXPRESSION_(FAILED|TIMEOUT)$/) },
    });
    expect(run.body.steps[0].error.message).toMatch(/^input: .*(memory limit of 128 MB|within 1000 ms)/);
    expect(slowestLiveMs).toBeLessThan(200);

    const fine = await define([{ id: 'a', action: 'transform.jsonata', with: { expression: '$ * 2' }, input: 'input.n' }]);
    const ok = await t
      .http()
      .post(`/api/workflows/${fine.body.id}/run?wait=30`)
      .set(bearer(org.member))
      .send({ input: { n: 4 } });
    expect(ok.body).toMatchObject({ status: 'succeeded', output: { a: 8 } });
  });
});
