import { randomUUID } from 'node:crypto';
import { install, registerAgent, settled as executionSettled } from './support/agents';
import { withKey } from './support/api-keys';
import { expectError } from './support/envelope';
import { eventually } from './support/eventually';
import { FakeRemoteAgent, HOLD, RemoteCall, Route, startFakeRemoteAgent } from './support/fake-remote-agent';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

interface StepRecord {
  id: string;
  status: string;
  attempts: number;
  output: unknown;
  error: { code: string; message: string } | null;
  executionId: string | null;
  reason: string | null;
  childRunId: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}
interface RunBody {
  id: string;
  workflowVersion: number;
  status: string;
  input: unknown;
  output: unknown;
  error: { code: string; message: string } | null;
  retryOf: string | null;
  retriedBy: string | null;
  triggeredBy: { type: string; id: string };
  steps: StepRecord[];
}

// Retrying a finished run (and an execution) as a user sees it: the steps that succeeded are
// taken over and never called again, the rest runs; who may retry, and what is refused.
// Enterprise organizations: these specs make more requests than the starter budget allows.
describe('workflow retry', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let remote: FakeRemoteAgent;
  /** Paths of the remote agent that answer 500 until a test "fixes" them. */
  const broken = new Set<string>();
  const answer: Route = (call) => (broken.has(new URL(call.url, 'http://x').pathname) ? { status: 500 } : { body: { path: call.url } });
  const agents: Record<string, string> = {};

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/first': answer, '/second': answer, '/third': answer, '/hold': () => HOLD });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [org, other] = await Promise.all([t.newOrg('enterprise'), t.newOrg('enterprise')]);
    for (const slug of ['transform', 'http']) await install(t, org, slug);
    for (const path of ['/first', '/second', '/third', '/hold']) {
      agents[path.slice(1)] = await registerAgent(t, org, {
        name: path.slice(1),
        kind: 'http.agent',
        config: { url: `${remote.url}${path}` },
        maxAttempts: 1,
      });
    }
  });
  afterAll(async () => {
    await t.close();
    await remote.close();
  });

  /** Every call the remote agent received on `path`, whatever its idempotency key. */
  const callsTo = (path: string): RemoteCall[] => [...remote.calls.values()].flat().filter((c) => c.url === path);

  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const get = async (workflowId: string, runId: string): Promise<RunBody> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as RunBody;
  };
  const settled = (workflowId: string, runId: string): Promise<RunBody> => {
    let status: unknown;
    return eventually(
      async () => {
        const body = await get(workflowId, runId);
        status = body.status;
        return ['queued', 'running', 'waiting'].includes(body.status) ? undefined : body;
      },
      { timeoutMs: 20_000, intervalMs: 50, message: () => `run ${runId} to finish (still ${status})` },
    );
  };
  /** A run of the workflow, once final. */
  const ran = async (workflowId: string, input: unknown = {}): Promise<RunBody> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input });
    expect(res.status).toBe(202);
    return settled(workflowId, res.body.id as string);
  };
  const retry = (workflowId: string, runId: string, body: object = {}, who: { token: string } = org.member) =>
    t.http().post(`/api/workflows/${workflowId}/runs/${runId}/retry?wait=0`).set(bearer(who)).send(body);
  /** A retry accepted, once final. */
  const retried = async (workflowId: string, runId: string, body: object = {}): Promise<RunBody> => {
    const res = await retry(workflowId, runId, body);
    if (res.status !== 202) throw new Error(`retry: ${res.status} ${JSON.stringify(res.body)}`);
    expect(res.headers.location).toBe(`/api/workflows/${workflowId}/runs/${res.body.id}`);
    return settled(workflowId, res.body.id as string);
  };
  /** A run of the workflow while the second agent is broken, once final. */
  const failedRun = (workflowId: string, input: unknown = {}): Promise<RunBody> => {
    broken.add('/second');
    return ran(workflowId, input).finally(() => broken.delete('/second'));
  };
  const step = (run: RunBody, id: string): StepRecord => run.steps.find((s) => s.id === id)!;
  const statuses = (run: RunBody) => run.steps.map((s) => [s.id, s.status]);

  /** first -> second -> third, each a remote agent. */
  const threeSteps = () =>
    defined({
      name: 'three steps',
      steps: [
        { id: 'first', agent: agents.first },
        { id: 'second', agent: agents.second, needs: ['first'] },
        { id: 'third', agent: agents.third, needs: ['second'] },
      ],
    });

  describe('a run whose second step failed', () => {
    let workflowId: string;
    let failed: RunBody;
    let retry1: RunBody;

    beforeAll(async () => {
      workflowId = await threeSteps();
      failed = await failedRun(workflowId, { order: 7 });
    });

    it('failed at the second step, having called the first once', () => {
      expect(failed.status).toBe('failed');
      expect(statuses(failed)).toEqual([
        ['first', 'succeeded'],
        ['second', 'failed'],
        ['third', 'skipped'],
      ]);
      expect(callsTo('/first')).toHaveLength(1);
    });

    it('succeeds once retried after the receiver is fixed, without calling the first step again', async () => {
      const before = { second: callsTo('/second').length, third: callsTo('/third').length };
      retry1 = await retried(workflowId, failed.id);
      expect(retry1).toMatchObject({
        status: 'succeeded',
        retryOf: failed.id,
        retriedBy: null,
        input: { order: 7 },
        workflowVersion: failed.workflowVersion,
        triggeredBy: { type: 'user', id: org.member.id },
      });
      expect(statuses(retry1)).toEqual([
        ['first', 'succeeded'],
        ['second', 'succeeded'],
        ['third', 'succeeded'],
      ]);
      // The first step's record is the old run's, as committed.
      expect(step(retry1, 'first')).toEqual(step(failed, 'first'));
      expect(callsTo('/first')).toHaveLength(1);
      expect(callsTo('/second')).toHaveLength(before.second + 1);
      expect(callsTo('/third')).toHaveLength(before.third + 1);
      expect(retry1.output).toEqual({ first: { path: '/first' }, second: { path: '/second' }, third: { path: '/third' } });
    });

    it('shows retriedBy on the old run and retryOf on the new one, through GET and the history', async () => {
      expect(await get(workflowId, failed.id)).toMatchObject({ status: 'failed', retriedBy: retry1.id, retryOf: null });
      expect(await get(workflowId, retry1.id)).toMatchObject({ retryOf: failed.id, retriedBy: null });
      const history = await t.http().get(`/api/workflows/${workflowId}/runs`).set(bearer(org.viewer));
      expect(history.body.data).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: failed.id, retriedBy: retry1.id }),
          expect.objectContaining({ id: retry1.id, retryOf: failed.id }),
        ]),
      );
    });

    it('refuses a second retry of the same run, naming the first', async () => {
      const res = await retry(workflowId, failed.id);
      expectError(res, 409, 'RUN_ALREADY_RETRIED');
      expect(res.body.error.message).toContain(retry1.id);
    });

    it('refuses to retry a run that succeeded without fromStep', async () => {
      expectError(await retry(workflowId, retry1.id), 409, 'NOTHING_TO_RETRY');
    });

    it('with fromStep runs that step and what is downstream of it again, and keeps what comes before', async () => {
      const before = { first: callsTo('/first').length, second: callsTo('/second').length, third: callsTo('/third').length };
      const again = await retried(workflowId, retry1.id, { fromStep: 'second' });
      expect(again).toMatchObject({ status: 'succeeded', retryOf: retry1.id });
      expect(step(again, 'first')).toEqual(step(retry1, 'first'));
      expect(step(again, 'second').startedAt).not.toBe(step(retry1, 'second').startedAt);
      expect(callsTo('/first')).toHaveLength(before.first);
      expect(callsTo('/second')).toHaveLength(before.second + 1);
      expect(callsTo('/third')).toHaveLength(before.third + 1);
      // fromStep the last step: only it runs.
      const last = await retried(workflowId, again.id, { fromStep: 'third' });
      expect(callsTo('/second')).toHaveLength(before.second + 1);
      expect(callsTo('/third')).toHaveLength(before.third + 2);
      expect(step(last, 'second')).toEqual(step(again, 'second'));
    });

    it('refuses a fromStep that is not a step of the version, and a malformed body', async () => {
      const failed = await failedRun(workflowId);
      expectError(await retry(workflowId, failed.id, { fromStep: 'fourth' }), 400, 'VALIDATION_FAILED', 'fromStep');
      expectError(await retry(workflowId, failed.id, { fromStep: 'Not a step!' }), 400, 'VALIDATION_FAILED', 'fromStep');
      expectError(await retry(workflowId, failed.id, { fromStep: 7 }), 400, 'VALIDATION_FAILED', 'fromStep');
      expectError(await retry(workflowId, failed.id, { fromStep: 'a'.repeat(100_000) }), 400, 'VALIDATION_FAILED', 'fromStep');
      expectError(await retry(workflowId, failed.id, { fromStep: null }), 400, 'VALIDATION_FAILED', 'fromStep');
      expectError(await retry(workflowId, failed.id, { version: 'newest' }), 400, 'VALIDATION_FAILED', 'version');
      expectError(await retry(workflowId, failed.id, { fromStep: 'first', extra: true }), 400, 'VALIDATION_FAILED');
      expectError(await retry(workflowId, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      // None of them started a run.
      expect((await get(workflowId, failed.id)).retriedBy).toBeNull();
    });

    it("answers another organization's run, and an unknown one, as not found", async () => {
      expectError(await retry(workflowId, failed.id, {}, other.member), 404, 'RUN_NOT_FOUND');
      expectError(await retry(workflowId, randomUUID()), 404, 'RUN_NOT_FOUND');
      expectError(await retry(randomUUID(), failed.id), 404, 'RUN_NOT_FOUND');
    });

    it('refuses a viewer and an API key without workflows:run', async () => {
      const failedAgain = await failedRun(workflowId);
      expectError(await retry(workflowId, failedAgain.id, {}, org.viewer), 403, 'FORBIDDEN');
      const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'ci', role: 'member' });
      const key = await t
        .http()
        .post(`/api/service-accounts/${account.body.id}/api-keys`)
        .set(bearer(org.admin))
        .send({ name: 'read only', scopes: ['workflows:read'] });
      expect(key.status).toBe(201);
      const res = await t
        .http()
        .post(`/api/workflows/${workflowId}/runs/${failedAgain.id}/retry?wait=0`)
        .set(withKey(key.body.key))
        .send({});
      expectError(res, 403, 'FORBIDDEN');
      // Nothing was started by the refusals.
      expect((await get(workflowId, failedAgain.id)).retriedBy).toBeNull();
    });

    it('starts one run of two retries sent at once; the other is refused', async () => {
      const failedOnce = await failedRun(workflowId);
      const answers = await Promise.all([retry(workflowId, failedOnce.id), retry(workflowId, failedOnce.id)]);
      expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
      const refused = answers.find((r) => r.status === 409)!;
      const accepted = answers.find((r) => r.status === 202)!;
      expectError(refused, 409, 'RUN_ALREADY_RETRIED');
      expect(refused.body.error.message).toContain(accepted.body.id);
      expect((await settled(workflowId, accepted.body.id as string)).status).toBe('succeeded');
    });
  });

  it('refuses to retry a run that is still waiting (RUN_NOT_FINISHED), and retries it once canceled', async () => {
    const workflowId = await defined({
      name: 'sleeper',
      steps: [
        { id: 'first', agent: agents.first },
        { id: 'nap', sleep: { seconds: 60 }, needs: ['first'] },
      ],
    });
    const started = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
    await eventually(async () => (await get(workflowId, started.body.id as string)).status === 'waiting', {
      timeoutMs: 10_000,
      intervalMs: 50,
      message: () => 'the run to wait',
    });
    const calls = callsTo('/first').length;
    expectError(await retry(workflowId, started.body.id as string), 409, 'RUN_NOT_FINISHED');
    const canceled = await t.http().post(`/api/workflows/${workflowId}/runs/${started.body.id}/cancel`).set(bearer(org.member));
    expect(canceled.body.status).toBe('canceled');
    const res = await retry(workflowId, started.body.id as string);
    expect(res.status).toBe(202);
    // The sleep runs again, the first step does not.
    const waiting = await eventually(
      async () => {
        const run = await get(workflowId, res.body.id as string);
        return run.status === 'waiting' && run;
      },
      { timeoutMs: 10_000, intervalMs: 50, message: () => 'the retry to wait' },
    );
    expect(statuses(waiting)).toEqual([
      ['first', 'succeeded'],
      ['nap', 'waiting'],
    ]);
    expect(callsTo('/first')).toHaveLength(calls);
    await t.http().post(`/api/workflows/${workflowId}/runs/${res.body.id}/cancel`).set(bearer(org.member));
  });

  it('keeps a switch with the branch it did not take skipped, and runs only what failed', async () => {
    const workflowId = await defined({
      name: 'switch',
      steps: [
        { id: 'route', switch: { cases: [{ when: 'input.fast', steps: ['fast'] }], default: ['slow'] } },
        { id: 'fast', ...jsonata('"fast"') },
        { id: 'slow', ...jsonata('"slow"') },
        { id: 'after-slow', ...jsonata('"after"'), needs: ['slow'] },
        { id: 'notify', agent: agents.second, needs: ['fast'] },
      ],
    });
    const failed = await failedRun(workflowId, { fast: true });
    expect(statuses(failed)).toEqual([
      ['route', 'succeeded'],
      ['fast', 'succeeded'],
      ['slow', 'skipped'],
      ['after-slow', 'skipped'],
      ['notify', 'failed'],
    ]);
    const again = await retried(workflowId, failed.id);
    expect(again.status).toBe('succeeded');
    for (const id of ['route', 'fast', 'slow', 'after-slow']) expect(step(again, id)).toEqual(step(failed, id));
    expect(step(again, 'slow').reason).toMatch(/^not taken: switch 'route'/);
    expect(step(again, 'notify').status).toBe('succeeded');
  });

  it('keeps a map step and a workflow step (its child run) that succeeded', async () => {
    const child = await defined({ name: 'child', steps: [{ id: 'echo', ...jsonata('input') }] });
    const workflowId = await defined({
      name: 'map and child',
      steps: [
        { id: 'each', map: { over: 'input.items', step: jsonata('$ * 2') } },
        { id: 'call', workflow: child, input: '{ "n": 1 }' },
        { id: 'notify', agent: agents.second, needs: ['each', 'call'] },
      ],
    });
    const failed = await failedRun(workflowId, { items: [1, 2, 3] });
    expect(failed.status).toBe('failed');
    const again = await retried(workflowId, failed.id);
    expect(again.status).toBe('succeeded');
    expect(step(again, 'each')).toMatchObject({ status: 'succeeded', output: [2, 4, 6], startedAt: step(failed, 'each').startedAt });
    expect(step(again, 'call')).toMatchObject({ status: 'succeeded', childRunId: step(failed, 'call').childRunId });
    const childRuns = await t.http().get(`/api/workflows/${child}/runs`).set(bearer(org.viewer));
    expect(childRuns.body.data).toHaveLength(1);
  });

  it('with version latest runs the current version, keeping by id the steps in both', async () => {
    const v1 = {
      name: 'versions',
      steps: [
        { id: 'first', agent: agents.first },
        { id: 'second', agent: agents.second, needs: ['first'] },
      ],
    };
    const workflowId = await defined(v1);
    const failed = await failedRun(workflowId);
    const put = await t
      .http()
      .put(`/api/workflows/${workflowId}`)
      .set(bearer(org.admin))
      .send({ ...v1, steps: [...v1.steps, { id: 'added', ...jsonata('$'), input: 'steps.second.output', needs: ['second'] }] });
    expect(put.status).toBe(200);
    const calls = callsTo('/first').length;
    expectError(await retry(workflowId, failed.id, { fromStep: 'added' }), 400, 'VALIDATION_FAILED', 'fromStep');
    const latest = await retried(workflowId, failed.id, { version: 'latest' });
    expect(latest).toMatchObject({ status: 'succeeded', workflowVersion: failed.workflowVersion + 1 });
    expect(step(latest, 'first')).toEqual(step(failed, 'first'));
    expect(step(latest, 'added')).toMatchObject({ status: 'succeeded', output: { path: '/second' } });
    expect(callsTo('/first')).toHaveLength(calls);
  });

  describe('an execution', () => {
    const execute = (agentId: string) =>
      t
        .http()
        .post(`/api/agents/${agentId}/execute?wait=0`)
        .set(bearer(org.member))
        .send({ input: { n: 1 } });
    const retryExecution = (agentId: string, id: string, who: { token: string } = org.member) =>
      t.http().post(`/api/agents/${agentId}/history/${id}/retry?wait=10`).set(bearer(who)).send();

    it('is retried with its input once failed; retryOf and retriedBy link the two', async () => {
      broken.add('/third');
      const res = await execute(agents.third);
      const failed = await executionSettled(t, org, agents.third, res.body.id as string);
      broken.delete('/third');
      expect(failed.status).toBe('failed');

      expectError(await retryExecution(agents.third, failed.id as string, org.viewer), 403, 'FORBIDDEN');
      expectError(await retryExecution(agents.third, failed.id as string, other.member), 404, 'EXECUTION_NOT_FOUND');
      const again = await retryExecution(agents.third, failed.id as string);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'succeeded', input: { n: 1 }, retryOf: failed.id, retriedBy: null });
      const old = await t.http().get(`/api/agents/${agents.third}/history/${failed.id}`).set(bearer(org.viewer));
      expect(old.body).toMatchObject({ status: 'failed', retriedBy: again.body.id });

      const second = await retryExecution(agents.third, failed.id as string);
      expectError(second, 409, 'EXECUTION_ALREADY_RETRIED');
      expect(second.body.error.message).toContain(again.body.id);
      expectError(await retryExecution(agents.third, again.body.id as string), 409, 'NOTHING_TO_RETRY');
    });

    it('refuses to retry an execution that goes on', async () => {
      const res = await execute(agents.hold);
      await remote.callsInFlight();
      expectError(await retryExecution(agents.hold, res.body.id as string), 409, 'EXECUTION_NOT_FINISHED');
      await t.http().post(`/api/agents/${agents.hold}/history/${res.body.id}/cancel`).set(bearer(org.member));
      remote.dropHeld();
    });
  });
});
