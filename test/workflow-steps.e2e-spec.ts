import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { FakeRemoteAgent, startFakeRemoteAgent, succeedsOnCall } from './support/fake-remote-agent';
import { untilJobDone } from './support/queue-job';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
/** A step of no kind: the message lists the kinds the service has (more may come after switch). */
const KIND_LIST_NONE = /needs exactly one of agent, action, sleep,? .*switch.*; it has none$/;

interface StepRecord {
  id: string;
  status: string;
  attempts: number;
  input: unknown;
  output: unknown;
  error: { code: string; message: string } | null;
  executionId: string | null;
  resumeAt: string | null;
  reason: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}
interface RunBody {
  id: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
  steps: StepRecord[];
}

// The step kinds (sleep, switch), onError, onFailure and retries that wait, as a user sees them.
// Enterprise organization: these specs make more requests than the starter budget allows.
describe('workflow steps', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let flaky: string;
  let failing: string;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({
      '/flaky': succeedsOnCall(3),
      '/fail': () => ({ status: 500 }),
    });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    for (const slug of ['transform', 'http']) await install(t, org, slug);
    const remoteAgent = (path: string) =>
      registerAgent(t, org, { name: path.slice(1), kind: 'http.agent', config: { url: `${remote.url}${path}` }, maxAttempts: 1 });
    [flaky, failing] = await Promise.all([remoteAgent('/flaky'), remoteAgent('/fail')]);
  });
  afterAll(async () => {
    await t.close();
    await remote.close();
  });

  const define = (definition: Record<string, unknown>) => t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await define(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  /** Starts a run and answers at once (202): runs here wait, and are followed with `settled` or `observe`. */
  const start = async (id: string, input: unknown): Promise<RunBody> => {
    const res = await t.http().post(`/api/workflows/${id}/run?wait=0`).set(bearer(org.member)).send({ input });
    expect([200, 202]).toContain(res.status);
    return res.body as RunBody;
  };
  const get = async (workflowId: string, runId: string): Promise<RunBody> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as RunBody;
  };
  /** The run once it is final: queued, running and waiting are not. */
  const settled = async (workflowId: string, runId: string, timeoutMs = 20_000): Promise<RunBody> => {
    let status: unknown;
    return eventually(
      async () => {
        const body = await get(workflowId, runId);
        status = body.status;
        return ['queued', 'running', 'waiting'].includes(body.status) ? undefined : body;
      },
      { timeoutMs, intervalMs: 100, message: () => `run ${runId} to finish (still ${status})` },
    );
  };
  /** The run once `seen` holds of it (checked every 20 ms). */
  const observe = async (workflowId: string, runId: string, what: string, seen: (run: RunBody) => boolean, timeoutMs = 10_000) => {
    let last: unknown;
    return eventually(
      async () => {
        const body = await get(workflowId, runId);
        last = { status: body.status, steps: body.steps.map((s) => [s.id, s.status]) };
        return seen(body) ? body : undefined;
      },
      { timeoutMs, intervalMs: 20, message: () => `${what} (last seen ${JSON.stringify(last)})` },
    );
  };
  const step = (body: RunBody, id: string): StepRecord => {
    const found = body.steps.find((s) => s.id === id);
    if (!found) throw new Error(`no step '${id}' in ${JSON.stringify(body.steps.map((s) => s.id))}`);
    return found;
  };
  const statuses = (body: RunBody) => body.steps.map((s) => [s.id, s.status]);
  const ms = (iso: string | null) => Date.parse(iso!);

  describe('definition', () => {
    const problems = async (definition: Record<string, unknown>) => {
      const res = await define(definition);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'WORKFLOW_INVALID', status: 400, message: expect.any(String) });
      expect(Object.keys(res.body)).toEqual(['error']);
      return res.body.error.details as Array<{ path: string; message: string }>;
    };
    const a = { id: 'a', ...jsonata('$') };
    const b = { id: 'b', ...jsonata('$') };

    it.each<[string, Record<string, unknown>, string, string | RegExp]>([
      // sleep
      [
        'a sleep with both seconds and until',
        { steps: [{ id: 'nap', sleep: { seconds: 1, until: '"2030-01-01T00:00:00Z"' } }] },
        'steps[0].sleep',
        "step 'nap': sleep needs exactly one of seconds or until",
      ],
      ['a sleep with neither', { steps: [{ id: 'nap', sleep: {} }] }, 'steps[0].sleep', 'sleep needs exactly one of seconds or until'],
      [
        "a sleep past the workflow's timeoutMs",
        { timeoutMs: 5000, steps: [a, { id: 'nap', sleep: { seconds: 5 } }] },
        'steps[1].sleep.seconds',
        "step 'nap' waits 5 s, past the run's timeoutMs (5000)",
      ],
      [
        'a sleep past the default timeoutMs (an hour)',
        { steps: [{ id: 'nap', sleep: { seconds: 3600 } }] },
        'steps[0].sleep.seconds',
        "past the run's timeoutMs (3600000)",
      ],
      ['a sleep of 0 seconds', { steps: [{ id: 'nap', sleep: { seconds: 0 } }] }, 'steps[0].sleep.seconds', '>= 1'],
      ['a sleep of more than a day', { steps: [{ id: 'nap', sleep: { seconds: 86401 } }] }, 'steps[0].sleep.seconds', '86400'],
      [
        'a sleep until that does not compile',
        { steps: [{ id: 'nap', sleep: { until: 'input.(' } }] },
        'steps[0].sleep.until',
        "step 'nap' sleep.until:",
      ],
      [
        'a sleep until that reads a step it does not wait for',
        { steps: [a, { id: 'nap', sleep: { until: 'steps.a.output' } }] },
        'steps[1].sleep.until',
        "step 'nap' sleep.until reads steps.a but does not wait for it",
      ],
      [
        'a retry on a sleep',
        { steps: [{ id: 'nap', sleep: { seconds: 1 }, retry: { maxAttempts: 2 } }] },
        'steps[0].retry',
        "step 'nap': retry applies to steps that call out (agent, action)",
      ],
      [
        'a timeoutMs on a sleep',
        { steps: [{ id: 'nap', sleep: { seconds: 1 }, timeoutMs: 1000 }] },
        'steps[0].timeoutMs',
        "step 'nap': timeoutMs applies to steps that call out",
      ],
      // switch
      [
        'a switch naming an unknown step',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'true', steps: ['ghost'] }] } }] },
        'steps[0].switch',
        "step 'route' lists 'ghost', which is not a step",
      ],
      [
        'a switch with an unknown default step',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'true', steps: ['a'] }], default: ['ghost'] } }, a] },
        'steps[0].switch',
        "step 'route' lists 'ghost', which is not a step",
      ],
      [
        'a switch that lists itself',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'true', steps: ['route'] }] } }] },
        'steps[0].switch',
        "step 'route' lists itself as one of its branches",
      ],
      [
        'a step in two switches',
        {
          steps: [
            { id: 'one', switch: { cases: [{ when: 'true', steps: ['a'] }] } },
            { id: 'two', switch: { cases: [{ when: 'true', steps: ['b'] }], default: ['a'] } },
            a,
            b,
          ],
        },
        'steps[1].switch',
        "step 'a' is a branch of both 'one' and 'two'",
      ],
      [
        'a switch when that does not compile',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'input.kind = ', steps: ['a'] }] } }, a] },
        'steps[0].switch.cases[0].when',
        "step 'route' switch.cases[0].when:",
      ],
      ['a switch with no cases', { steps: [{ id: 'route', switch: { cases: [] } }] }, 'steps[0].switch.cases', '1'],
      [
        'a switch case with no steps',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'true', steps: [] }] } }] },
        'steps[0].switch.cases[0].steps',
        '1',
      ],
      [
        'a retry on a switch',
        { steps: [{ id: 'route', switch: { cases: [{ when: 'true', steps: ['a'] }] }, retry: { maxAttempts: 2 } }, a] },
        'steps[0].retry',
        "step 'route': retry applies to steps that call out",
      ],
      [
        'a switch and a sleep in one step',
        { steps: [{ id: 'x', sleep: { seconds: 1 }, switch: { cases: [{ when: 'true', steps: ['a'] }] } }, a] },
        'steps[0]',
        /^step 'x' needs exactly one of agent, action, sleep,? .*switch.*; it has sleep and switch$/,
      ],
      ['a step of no kind', { steps: [{ id: 'x' }] }, 'steps[0]', KIND_LIST_NONE],
      // onFailure
      [
        'a sleep as onFailure',
        { steps: [a], onFailure: { id: 'notify', sleep: { seconds: 1 } } },
        'onFailure',
        "onFailure runs an agent or an action; 'sleep' cannot be one",
      ],
      [
        'a switch as onFailure',
        { steps: [a], onFailure: { id: 'notify', switch: { cases: [{ when: 'true', steps: ['a'] }] } } },
        'onFailure',
        "onFailure runs an agent or an action; 'switch' cannot be one",
      ],
      [
        'needs on onFailure',
        { steps: [a], onFailure: { id: 'notify', ...jsonata('$'), needs: ['a'] } },
        'onFailure.needs',
        'onFailure runs once when the run fails; it takes no needs',
      ],
      ['an if on onFailure', { steps: [a], onFailure: { id: 'notify', ...jsonata('$'), if: 'true' } }, 'onFailure.if', 'it takes no if'],
      [
        'onError on onFailure',
        { steps: [a], onFailure: { id: 'notify', ...jsonata('$'), onError: 'continue' } },
        'onFailure.onError',
        'it takes no onError',
      ],
      [
        "an onFailure id that is a step's",
        { steps: [a], onFailure: { id: 'a', ...jsonata('$') } },
        'onFailure.id',
        "onFailure's id 'a' is also a step's (steps[0])",
      ],
      ['an onFailure of no kind', { steps: [a], onFailure: { id: 'notify' } }, 'onFailure', 'it has none'],
      // retry
      [
        'a lowercase retryOn code',
        { steps: [{ ...a, retry: { maxAttempts: 2, retryOn: ['upstream_error'] } }] },
        'steps[0].retry.retryOn[0]',
        'pattern',
      ],
      [
        'a maxBackoffMs below backoffMs',
        { steps: [{ ...a, retry: { maxAttempts: 3, backoffMs: 500, maxBackoffMs: 100 } }] },
        'steps[0].retry.maxBackoffMs',
        "step 'a': maxBackoffMs (100) is less than backoffMs (500)",
      ],
      ['11 attempts', { steps: [{ ...a, retry: { maxAttempts: 11 } }] }, 'steps[0].retry.maxAttempts', '10'],
      ['an unknown backoff', { steps: [{ ...a, retry: { maxAttempts: 2, backoff: 'linear' } }] }, 'steps[0].retry.backoff', 'allowed'],
      ['an unknown onError', { steps: [{ ...a, onError: 'ignore' }] }, 'steps[0].onError', 'allowed'],
    ])('reports %s', async (_what, definition, path, message) => {
      const details = await problems({ name: 'x', ...definition });
      const text = typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message);
      expect(details).toEqual(expect.arrayContaining([expect.objectContaining({ path, message: text })]));
    });

    it('reports every problem of the new kinds at once', async () => {
      const details = await problems({
        name: 'x',
        timeoutMs: 10_000,
        steps: [
          { id: 'nap', sleep: { seconds: 1, until: '"2030-01-01T00:00:00Z"' } },
          { id: 'long', sleep: { seconds: 10 }, retry: { maxAttempts: 2 } },
          { id: 'route', switch: { cases: [{ when: '((', steps: ['ghost', 'route'] }] } },
          { id: 'call', ...jsonata('$'), retry: { maxAttempts: 3, backoffMs: 500, maxBackoffMs: 100 } },
          { id: 'none' },
        ],
        onFailure: { id: 'call', sleep: { seconds: 1 }, needs: ['nap'] },
      });
      expect(details).toEqual(
        expect.arrayContaining([
          { path: 'steps[0].sleep', message: "step 'nap': sleep needs exactly one of seconds or until" },
          { path: 'steps[1].retry', message: "step 'long': retry applies to steps that call out (agent, action)" },
          { path: 'steps[1].sleep.seconds', message: expect.stringContaining("past the run's timeoutMs (10000)") },
          { path: 'steps[2].switch', message: "step 'route' lists 'ghost', which is not a step" },
          { path: 'steps[2].switch', message: "step 'route' lists itself as one of its branches" },
          { path: 'steps[2].switch.cases[0].when', message: expect.stringContaining("step 'route' switch.cases[0].when:") },
          { path: 'steps[3].retry.maxBackoffMs', message: "step 'call': maxBackoffMs (100) is less than backoffMs (500)" },
          { path: 'steps[4]', message: expect.stringMatching(KIND_LIST_NONE) },
          { path: 'onFailure.id', message: "onFailure's id 'call' is also a step's (steps[3])" },
          { path: 'onFailure', message: "onFailure runs an agent or an action; 'sleep' cannot be one" },
          { path: 'onFailure.needs', message: 'onFailure runs once when the run fails; it takes no needs' },
        ]),
      );
      expect(details).toHaveLength(11);
    });

    it('saves the new kinds as given', async () => {
      const definition = {
        name: 'kinds',
        steps: [
          { id: 'nap', sleep: { seconds: 1 } },
          { id: 'route', switch: { cases: [{ when: 'input.kind = "a"', steps: ['a'] }], default: ['b'] }, needs: ['nap'] },
          {
            ...a,
            onError: 'continue',
            retry: { maxAttempts: 3, backoffMs: 0, backoff: 'fixed', maxBackoffMs: 10, retryOn: ['UPSTREAM_ERROR'] },
          },
          b,
        ],
        onFailure: { id: 'notify', ...jsonata('$'), input: 'error.code' },
      };
      const res = await define(definition);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ version: 1, steps: definition.steps, onFailure: definition.onFailure });
    });
  });

  describe('sleep', () => {
    it('waits durably: the run is waiting with no worker, then goes on at resumeAt', async () => {
      const id = await defined({
        name: 'nap',
        steps: [
          { id: 'before', ...jsonata('"before"') },
          { id: 'nap', sleep: { seconds: 2 }, needs: ['before'] },
          { id: 'after', ...jsonata('"after"'), needs: ['nap'] },
        ],
      });
      const started = await start(id, {});
      const waiting = await observe(id, started.id, 'the run to wait', (r) => r.status === 'waiting');
      expect(statuses(waiting)).toEqual([
        ['before', 'succeeded'],
        ['nap', 'waiting'],
        ['after', 'pending'],
      ]);
      const nap = step(waiting, 'nap');
      expect(nap).toMatchObject({ attempts: 1, output: null, error: null, resumeAt: expect.any(String), reason: null, finishedAt: null });
      const resumeAt = ms(nap.resumeAt);
      expect(resumeAt - ms(nap.startedAt)).toBeGreaterThanOrEqual(1500);
      expect(resumeAt - ms(nap.startedAt)).toBeLessThanOrEqual(2500);
      expect(step(waiting, 'after')).toMatchObject({ startedAt: null, resumeAt: null });
      const listed = await t.http().get(`/api/workflows/${id}/runs?status=waiting`).set(bearer(org.viewer));
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([expect.objectContaining({ id: started.id, status: 'waiting' })]);

      const done = await settled(id, started.id, 10_000);
      expect(done).toMatchObject({ status: 'succeeded', error: null });
      expect(statuses(done)).toEqual([
        ['before', 'succeeded'],
        ['nap', 'succeeded'],
        ['after', 'succeeded'],
      ]);
      expect(step(done, 'nap')).toMatchObject({ output: { until: nap.resumeAt }, error: null });
      expect(done.output).toEqual({ before: 'before', nap: { until: nap.resumeAt }, after: 'after' });
      expect(ms(step(done, 'after').startedAt)).toBeGreaterThanOrEqual(resumeAt - 50);
      expect(ms(step(done, 'nap').finishedAt)).toBeGreaterThanOrEqual(resumeAt - 50);
    });

    it('sleeps until the time an expression gives; fails with SLEEP_INVALID on one that is not a time', async () => {
      const id = await defined({
        name: 'until',
        steps: [
          { id: 'nap', sleep: { until: 'input.at' } },
          { id: 'after', ...jsonata('"after"'), needs: ['nap'] },
        ],
      });
      const at = new Date(Date.now() + 2500).toISOString();
      const past = new Date(Date.now() - 60_000).toISOString();
      const [timed, already, invalid, missing] = await Promise.all(
        [{ at }, { at: past }, { at: 'next tuesday' }, {}].map((input) => start(id, input)),
      );

      const waiting = await observe(id, timed.id, 'the run to wait', (r) => r.status === 'waiting');
      expect(step(waiting, 'nap')).toMatchObject({ status: 'waiting', resumeAt: at });

      const [done, pastDone, bad, none] = await Promise.all([timed, already, invalid, missing].map((r) => settled(id, r.id)));
      expect(done).toMatchObject({ status: 'succeeded', output: { nap: { until: at }, after: 'after' } });
      expect(ms(step(done, 'after').startedAt)).toBeGreaterThanOrEqual(Date.parse(at) - 50);
      // A time already past does not wait.
      expect(pastDone).toMatchObject({ status: 'succeeded', output: { nap: { until: past }, after: 'after' } });

      expect(bad).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'nap' failed: SLEEP_INVALID") },
      });
      expect(step(bad, 'nap')).toMatchObject({
        status: 'failed',
        error: { code: 'SLEEP_INVALID', message: 'sleep.until gave "next tuesday", not an ISO 8601 time' },
      });
      expect(step(bad, 'after')).toMatchObject({ status: 'skipped', startedAt: null });
      expect(none).toMatchObject({ status: 'failed', error: { code: 'STEP_FAILED' } });
      // No result is null to an expression.
      expect(step(none, 'nap').error).toEqual({ code: 'SLEEP_INVALID', message: 'sleep.until gave null, not an ISO 8601 time' });
    });

    it('cancels a sleeping run: its sleep is canceled and stays so after the due time', async () => {
      const id = await defined({
        name: 'cancel nap',
        steps: [
          { id: 'nap', sleep: { seconds: 1 } },
          { id: 'after', ...jsonata('"after"'), needs: ['nap'] },
        ],
      });
      const started = await start(id, {});
      const waiting = await observe(id, started.id, 'the run to wait', (r) => r.status === 'waiting');
      const resumeAt = ms(step(waiting, 'nap').resumeAt);

      const cancel = await t.http().post(`/api/workflows/${id}/runs/${started.id}/cancel`).set(bearer(org.member));
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ id: started.id, status: 'canceled', output: null, error: { code: 'CANCELED' } });
      expect(statuses(cancel.body)).toEqual([
        ['nap', 'canceled'],
        ['after', 'skipped'],
      ]);
      expect(step(cancel.body, 'nap')).toMatchObject({ resumeAt: null, finishedAt: expect.any(String) });

      // Past the time the sleep was due, and the resume job handled (taken by a worker and let go
      // of, so no longer queued or held; a completed job is deleted): it found nothing to do.
      await eventually(() => Date.now() > resumeAt, {
        timeoutMs: Math.max(0, resumeAt - Date.now()) + 1000,
        intervalMs: 20,
        message: 'the due time',
      });
      await untilJobDone(t, 'workflow_runs', started.id);
      const after = await get(id, started.id);
      expect(after).toMatchObject({ status: 'canceled', error: { code: 'CANCELED' }, output: null });
      expect(statuses(after)).toEqual([
        ['nap', 'canceled'],
        ['after', 'skipped'],
      ]);
      expect(step(after, 'after').startedAt).toBeNull();
      const again = await t.http().post(`/api/workflows/${id}/runs/${started.id}/cancel`).set(bearer(org.member));
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({ code: 'NOT_CANCELABLE', status: 409 });
    });
    it('times the run out at its timeoutMs when a sleep would end past it', async () => {
      const id = await defined({
        name: 'too long',
        timeoutMs: 1500,
        steps: [
          { id: 'nap', sleep: { until: 'input.at' } },
          { id: 'after', ...jsonata('"after"'), needs: ['nap'] },
        ],
      });
      const at = new Date(Date.now() + 60_000).toISOString();
      const started = await start(id, { at });
      const waiting = await observe(id, started.id, 'the run to wait', (r) => r.status === 'waiting');
      expect(step(waiting, 'nap')).toMatchObject({ status: 'waiting', resumeAt: at });
      const body = await settled(id, started.id, 10_000);
      expect(body).toMatchObject({ status: 'timed_out', output: null, error: { code: 'RUN_TIMEOUT' } });
      expect(statuses(body)).toEqual([
        ['nap', 'canceled'],
        ['after', 'skipped'],
      ]);
    });
  });

  describe('switch', () => {
    const takenIn = (body: RunBody) => body.steps.filter((s) => s.status === 'succeeded').map((s) => s.id);

    it('runs the branch of the first case that holds, skips the others with the reason, joins', async () => {
      const id = await defined({
        name: 'route',
        steps: [
          {
            id: 'route',
            switch: {
              cases: [
                { when: 'input.kind = "a"', steps: ['do_a'] },
                { when: 'input.kind = "b" or input.kind = "a"', steps: ['do_b'] },
              ],
              default: ['fallback'],
            },
          },
          { id: 'do_a', ...jsonata('"A"') },
          { id: 'do_b', ...jsonata('"B"') },
          { id: 'fallback', ...jsonata('"D"') },
          { id: 'after_b', ...jsonata('"after B"'), needs: ['do_b'] },
          {
            id: 'join',
            ...jsonata('$'),
            needs: ['do_a', 'do_b', 'fallback'],
            input: 'steps.do_a.output & steps.do_b.output & steps.fallback.output',
          },
        ],
      });
      const [ra, rb, rz] = await Promise.all(['a', 'b', 'z'].map((kind) => start(id, { kind })));
      const [a, b, z] = await Promise.all([ra, rb, rz].map((r) => settled(id, r.id)));

      // Case 0 holds (case 1 would too: the first one wins).
      expect(a).toMatchObject({ status: 'succeeded', error: null });
      expect(step(a, 'route')).toMatchObject({ status: 'succeeded', output: { case: 0, steps: ['do_a'] }, reason: null });
      expect(step(a, 'do_a')).toMatchObject({ status: 'succeeded', output: 'A' });
      for (const skipped of ['do_b', 'fallback'])
        expect(step(a, skipped)).toMatchObject({ status: 'skipped', reason: "not taken: switch 'route' took case 0", startedAt: null });
      expect(step(a, 'after_b')).toMatchObject({ status: 'skipped', reason: 'not taken: it needs only steps not taken' });
      expect(step(a, 'join')).toMatchObject({ status: 'succeeded', input: 'A', output: 'A' });
      expect(takenIn(a)).toEqual(['route', 'do_a', 'join']);
      expect(a.output).toEqual({ route: { case: 0, steps: ['do_a'] }, do_a: 'A', join: 'A' });
      // A branch waits for its switch without needs.
      expect(ms(step(a, 'do_a').startedAt)).toBeGreaterThanOrEqual(ms(step(a, 'route').finishedAt));

      expect(b.status).toBe('succeeded');
      expect(step(b, 'route').output).toEqual({ case: 1, steps: ['do_b'] });
      expect(takenIn(b)).toEqual(['route', 'do_b', 'after_b', 'join']);
      for (const skipped of ['do_a', 'fallback']) expect(step(b, skipped).reason).toBe("not taken: switch 'route' took case 1");
      expect(step(b, 'join').output).toBe('B');

      expect(z.status).toBe('succeeded');
      expect(step(z, 'route').output).toEqual({ case: 'default', steps: ['fallback'] });
      expect(takenIn(z)).toEqual(['route', 'fallback', 'join']);
      for (const skipped of ['do_a', 'do_b']) expect(step(z, skipped).reason).toBe("not taken: switch 'route' took the default");
      expect(step(z, 'after_b').reason).toBe('not taken: it needs only steps not taken');
      expect(step(z, 'join').output).toBe('D');
    });

    it('skips every branch when no case holds and there is no default; the run succeeds', async () => {
      const id = await defined({
        name: 'no default',
        steps: [
          { id: 'route', switch: { cases: [{ when: 'input.kind = "a"', steps: ['do_a', 'also_a'] }] } },
          { id: 'do_a', ...jsonata('"A"') },
          { id: 'also_a', ...jsonata('"A2"') },
          { id: 'after_a', ...jsonata('"after"'), needs: ['do_a', 'also_a'] },
          { id: 'anyway', ...jsonata('"anyway"') },
        ],
      });
      const body = await settled(id, (await start(id, { kind: 'z' })).id);
      expect(body).toMatchObject({ status: 'succeeded', error: null });
      expect(step(body, 'route')).toMatchObject({ status: 'succeeded', output: { case: null, steps: [] } });
      for (const skipped of ['do_a', 'also_a'])
        expect(step(body, skipped)).toMatchObject({ status: 'skipped', reason: "not taken: switch 'route' no case held" });
      expect(step(body, 'after_a')).toMatchObject({ status: 'skipped', reason: 'not taken: it needs only steps not taken' });
      expect(step(body, 'anyway')).toMatchObject({ status: 'succeeded', output: 'anyway' });
      expect(body.output).toEqual({ route: { case: null, steps: [] }, anyway: 'anyway' });
    });

    it('fails the run when a case cannot be evaluated', async () => {
      const id = await defined({
        name: 'bad when',
        steps: [
          { id: 'route', switch: { cases: [{ when: '$error("no route")', steps: ['do_a'] }], default: ['other'] } },
          { id: 'do_a', ...jsonata('"A"') },
          { id: 'other', ...jsonata('"O"') },
        ],
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({
        status: 'failed',
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'route' failed") },
      });
      expect(step(body, 'route')).toMatchObject({
        status: 'failed',
        error: { code: 'EXPRESSION_FAILED', message: expect.stringContaining('switch.cases[0].when') },
      });
      expect(statuses(body)).toEqual([
        ['route', 'failed'],
        ['do_a', 'skipped'],
        ['other', 'skipped'],
      ]);
    });
  });

  describe('onError: continue', () => {
    it('records the failure and goes on; later steps read steps.<id>.error', async () => {
      const id = await defined({
        name: 'continue',
        steps: [
          { id: 'bad', ...jsonata('$'), input: '$error("boom")', onError: 'continue' },
          { id: 'down', agent: failing, onError: 'continue' },
          {
            id: 'report',
            ...jsonata('$'),
            needs: ['bad', 'down'],
            input: '{"bad": steps.bad.error.code, "down": steps.down.error.code, "message": steps.down.error.message}',
          },
        ],
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({ status: 'succeeded', error: null });
      expect(statuses(body)).toEqual([
        ['bad', 'failed'],
        ['down', 'failed'],
        ['report', 'succeeded'],
      ]);
      expect(step(body, 'bad')).toMatchObject({
        output: null,
        error: { code: 'EXPRESSION_FAILED', message: expect.stringContaining('boom') },
        finishedAt: expect.any(String),
      });
      expect(step(body, 'down')).toMatchObject({
        attempts: 1,
        output: null,
        error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 500' },
      });
      const report = { bad: 'EXPRESSION_FAILED', down: 'UPSTREAM_ERROR', message: 'Agent answered 500' };
      expect(step(body, 'report')).toMatchObject({ input: report, output: report });
      expect(body.output).toEqual({ report });
    });
  });

  describe('onFailure', () => {
    it('runs once when the run fails, with error in its context; is skipped when the run succeeds', async () => {
      const id = await defined({
        name: 'on failure',
        steps: [
          { id: 'work', ...jsonata('$'), input: 'input.fail ? $error("boom") : input.n' },
          { id: 'next', ...jsonata('$ + 1'), needs: ['work'], input: 'steps.work.output' },
        ],
        onFailure: { id: 'notify', ...jsonata('$'), input: 'error.code' },
      });
      const [failing, fine] = await Promise.all([start(id, { fail: true }), start(id, { n: 1 })]);
      const [failed, succeeded] = await Promise.all([settled(id, failing.id), settled(id, fine.id)]);

      expect(failed).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'work' failed: EXPRESSION_FAILED") },
      });
      expect(statuses(failed)).toEqual([
        ['work', 'failed'],
        ['next', 'skipped'],
        ['notify', 'succeeded'],
      ]);
      expect(step(failed, 'work').error).toMatchObject({ code: 'EXPRESSION_FAILED', message: expect.stringContaining('boom') });
      expect(step(failed, 'next')).toMatchObject({ status: 'skipped', startedAt: null });
      expect(step(failed, 'notify')).toMatchObject({ attempts: 1, input: 'STEP_FAILED', output: 'STEP_FAILED', error: null });

      expect(succeeded).toMatchObject({ status: 'succeeded', error: null, output: { work: 1, next: 2 } });
      expect(statuses(succeeded)).toEqual([
        ['work', 'succeeded'],
        ['next', 'succeeded'],
        ['notify', 'skipped'],
      ]);
      expect(step(succeeded, 'notify')).toMatchObject({ attempts: 0, input: null, output: null, startedAt: null });
    });

    it('keeps the run failed with its own error when onFailure fails too; onFailure may read the steps', async () => {
      const id = await defined({
        name: 'failing on failure',
        steps: [{ id: 'work', ...jsonata('$'), input: '$error("boom")' }],
        onFailure: { id: 'notify', ...jsonata('$error("again: " & $)'), input: 'steps.work.error.code' },
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({
        status: 'failed',
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'work' failed: EXPRESSION_FAILED") },
      });
      expect(statuses(body)).toEqual([
        ['work', 'failed'],
        ['notify', 'failed'],
      ]);
      expect(step(body, 'notify')).toMatchObject({
        input: 'EXPRESSION_FAILED',
        error: { message: expect.stringContaining('again: EXPRESSION_FAILED') },
      });
    });

    it('retries onFailure with waits like any step; the run stays failed', async () => {
      const id = await defined({
        name: 'retried on failure',
        steps: [{ id: 'work', ...jsonata('$'), input: '$error("boom")' }],
        onFailure: {
          id: 'notify',
          agent: flaky,
          input: '{"code": error.code}',
          retry: { maxAttempts: 3, backoffMs: 200, backoff: 'fixed' },
        },
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'work' failed: EXPRESSION_FAILED") },
      });
      expect(step(body, 'notify')).toMatchObject({
        status: 'succeeded',
        attempts: 3,
        input: { code: 'STEP_FAILED' },
        output: { calls: 3 },
      });
      expect(remote.calls.get(`${body.id}:notify`)!.map((c) => JSON.parse(c.body))).toEqual(Array(3).fill({ code: 'STEP_FAILED' }));
    });

    it('does not run for a failure that onError: continue lets through', async () => {
      const id = await defined({
        name: 'continue, no failure',
        steps: [{ id: 'bad', ...jsonata('$'), input: '$error("boom")', onError: 'continue' }],
        onFailure: { id: 'notify', ...jsonata('$'), input: 'error.code' },
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({ status: 'succeeded', error: null });
      expect(statuses(body)).toEqual([
        ['bad', 'failed'],
        ['notify', 'skipped'],
      ]);
    });
  });

  describe('retry', () => {
    it('waits between attempts (run and step waiting, with the last error) and succeeds on the third', async () => {
      const id = await defined({
        name: 'retry',
        steps: [{ id: 'call', agent: flaky, retry: { maxAttempts: 3, backoffMs: 300, backoff: 'fixed' } }],
      });
      const started = await start(id, {});
      const waiting = await observe(id, started.id, 'the run to wait for another attempt', (r) => r.status === 'waiting');
      expect(step(waiting, 'call')).toMatchObject({
        status: 'waiting',
        resumeAt: expect.any(String),
        error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 503' },
        output: null,
      });

      const body = await settled(id, started.id);
      expect(body).toMatchObject({ status: 'succeeded', error: null, output: { call: { calls: 3 } } });
      expect(step(body, 'call')).toMatchObject({ status: 'succeeded', attempts: 3, error: null, executionId: expect.any(String) });
      const calls = remote.calls.get(`${body.id}:call`)!;
      expect(calls.map((c) => c.nth)).toEqual([1, 2, 3]);
      // Fixed backoff: each attempt comes at least backoffMs after the answer to the one before.
      for (const i of [1, 2]) expect(calls[i].at - calls[i - 1].answeredAt!).toBeGreaterThanOrEqual(280);
    });

    it('cancels a run waiting to retry a step: the step and its agent execution end canceled', async () => {
      const id = await defined({ name: 'cancel retry', steps: [{ id: 'call', agent: flaky, retry: { maxAttempts: 3, backoffMs: 5000 } }] });
      const started = await start(id, {});
      const waiting = await observe(id, started.id, 'the run to wait for another attempt', (r) => r.status === 'waiting');
      const { executionId } = step(waiting, 'call');
      expect(executionId).toEqual(expect.any(String));
      const cancel = await t.http().post(`/api/workflows/${id}/runs/${started.id}/cancel`).set(bearer(org.member));
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ status: 'canceled', error: { code: 'CANCELED' } });
      expect(step(cancel.body, 'call')).toMatchObject({ status: 'canceled', attempts: 1, resumeAt: null });
      // The step's execution shows in the agent's history; it ends with the step.
      let seen: unknown;
      const execution = await eventually(
        async () => {
          const res = await t.http().get(`/api/agents/${flaky}/history/${executionId}`).set(bearer(org.viewer));
          seen = res.body;
          return ['queued', 'running'].includes(res.body.status) ? undefined : res.body;
        },
        {
          timeoutMs: 3000,
          intervalMs: 100,
          message: () => `execution ${executionId} of the canceled run to end (${JSON.stringify(seen)})`,
        },
      );
      expect(execution).toMatchObject({ status: 'canceled', triggeredBy: { type: 'workflow_run', id: started.id } });
      expect(remote.calls.get(`${started.id}:call`)).toHaveLength(1);
    });

    it('fails once the attempts are used up', async () => {
      const id = await defined({ name: 'retry out', steps: [{ id: 'call', agent: flaky, retry: { maxAttempts: 2, backoffMs: 100 } }] });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({
        status: 'failed',
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'call' failed: UPSTREAM_ERROR") },
      });
      expect(step(body, 'call')).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'UPSTREAM_ERROR' }, resumeAt: null });
      expect(remote.calls.get(`${body.id}:call`)).toHaveLength(2);
    });

    it('does not retry a code not in retryOn', async () => {
      const id = await defined({
        name: 'retry on',
        steps: [{ id: 'call', agent: failing, retry: { maxAttempts: 3, backoffMs: 100, retryOn: ['AGENT_TIMEOUT'] } }],
      });
      const body = await settled(id, (await start(id, {})).id);
      expect(body).toMatchObject({ status: 'failed', error: { code: 'STEP_FAILED', message: expect.stringContaining('UPSTREAM_ERROR') } });
      expect(step(body, 'call')).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 500' },
      });
      expect(remote.calls.get(`${body.id}:call`)).toHaveLength(1);
    });
  });
});
