import { randomUUID } from 'node:crypto';
import { install } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

/** Workflow steps: a run starts a run of another workflow as its child, and waits for it without a worker. */
describe('workflow steps (child runs)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    for (const o of [org, other]) await install(t, o, 'transform');
  });
  afterAll(() => t.close());

  const define = (definition: Record<string, unknown>, as: TestOrg = org) =>
    t.http().post('/api/workflows').set(bearer(as.admin)).send(definition);
  const defined = async (definition: Record<string, unknown>, as: TestOrg = org): Promise<string> => {
    const res = await define(definition, as);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const started = async (workflowId: string, input: unknown): Promise<string> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };
  const read = async (workflowId: string, runId: string) =>
    (await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer))).body;
  const settled = (workflowId: string, runId: string) =>
    eventually(
      async () => {
        const body = await read(workflowId, runId);
        return ['queued', 'running', 'waiting'].includes(body.status) ? undefined : body;
      },
      { timeoutMs: 30_000, intervalMs: 100, message: `run ${runId} to finish` },
    );
  const step = (body: { steps: Array<{ id: string }> }, id: string) => body.steps.find((s) => s.id === id)! as Record<string, unknown>;

  describe('definition', () => {
    it("refuses a workflow step naming no workflow of the organization (another organization's too)", async () => {
      const foreign = await defined({ name: 'theirs', steps: [{ id: 'a', ...jsonata('$') }] }, other);
      const res = await define({
        name: 'calls',
        steps: [
          { id: 'ghost', workflow: randomUUID() },
          { id: 'foreign', workflow: foreign },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([
        { path: 'steps[0].workflow', message: expect.stringContaining('in this organization') },
        { path: 'steps[1].workflow', message: `step 'foreign': no workflow ${foreign} in this organization` },
      ]);
    });

    it('refuses, with WORKFLOW_CYCLE, a version that would start itself through its children', async () => {
      const leaf = await defined({ name: 'leaf', steps: [{ id: 'a', ...jsonata('$') }] });
      const middle = await defined({ name: 'middle', steps: [{ id: 'call', workflow: leaf }] });
      const top = await defined({ name: 'top', steps: [{ id: 'call', workflow: middle }] });

      const res = await t
        .http()
        .put(`/api/workflows/${leaf}`)
        .set(bearer(org.admin))
        .send({ name: 'leaf', steps: [{ id: 'back', workflow: top }] });
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({
        code: 'WORKFLOW_CYCLE',
        message: 'The workflow would start itself: leaf -> top -> middle -> leaf',
        status: 400,
      });
      const self = await t
        .http()
        .put(`/api/workflows/${leaf}`)
        .set(bearer(org.admin))
        .send({ name: 'leaf', steps: [{ id: 'me', workflow: leaf }] });
      expect(self.body.error).toMatchObject({ code: 'WORKFLOW_CYCLE', message: 'The workflow would start itself: leaf -> leaf' });
    });
  });

  it("waits for its child without a worker and takes the child's output; both runs link each other", async () => {
    const child = await defined({
      name: 'child',
      steps: [
        { id: 'nap', sleep: { seconds: 1 } },
        { id: 'double', ...jsonata('n * 2'), needs: ['nap'] },
      ],
      output: 'steps.double.output',
    });
    const parent = await defined({
      name: 'parent',
      steps: [
        { id: 'call', workflow: child, input: '{ "n": input.n + 1 }' },
        { id: 'after', ...jsonata('$ + 1'), needs: ['call'], input: 'steps.call.output' },
      ],
    });
    const runId = await started(parent, { n: 4 });

    const waiting = await eventually(
      async () => {
        const body = await read(parent, runId);
        return body.status === 'waiting' && step(body, 'call').childRunId ? body : undefined;
      },
      { timeoutMs: 10_000, message: 'the parent to wait for its child' },
    );
    expect(step(waiting, 'call')).toMatchObject({ status: 'waiting', resumeAt: null });

    const run = await settled(parent, runId);
    expect(run.status).toBe('succeeded');
    expect(step(run, 'call')).toMatchObject({ status: 'succeeded', output: 10 });
    expect(step(run, 'after').output).toBe(11);
    const childRun = await read(child, step(run, 'call').childRunId as string);
    expect(childRun).toMatchObject({
      status: 'succeeded',
      output: 10,
      input: { n: 5 },
      parentRunId: runId,
      triggeredBy: { type: 'workflow_run', id: runId },
    });
    expect(run.parentRunId).toBeNull();
  });

  it("fails the step with CHILD_RUN_FAILED when the child fails, and answers the child's run at once without wait", async () => {
    const failing = await defined({ name: 'failing', steps: [{ id: 'boom', ...jsonata('$error("boom")') }] });
    const parent = await defined({ name: 'waits', steps: [{ id: 'call', workflow: failing }] });
    const fireAndForget = await defined({ name: 'no wait', steps: [{ id: 'call', workflow: failing, detach: true }] });
    const [waited, notWaited] = await Promise.all([started(parent, {}), started(fireAndForget, {})]);

    const failed = await settled(parent, waited);
    expect(failed.status).toBe('failed');
    expect(step(failed, 'call')).toMatchObject({
      status: 'failed',
      error: { code: 'CHILD_RUN_FAILED', message: expect.stringContaining('ended failed: STEP_FAILED') },
    });

    const done = await settled(fireAndForget, notWaited);
    expect(done.status).toBe('succeeded');
    expect(step(done, 'call')).toMatchObject({ status: 'succeeded', output: { runId: step(done, 'call').childRunId } });
  });

  it('cancels the children of a canceled run', async () => {
    const sleeper = await defined({ name: 'sleeper', steps: [{ id: 'nap', sleep: { seconds: 600 } }] });
    const parent = await defined({ name: 'parent of a sleeper', steps: [{ id: 'call', workflow: sleeper }] });
    const runId = await started(parent, {});
    const childRunId = await eventually(
      async () => {
        const body = await read(parent, runId);
        return body.status === 'waiting' ? (step(body, 'call').childRunId as string) : undefined;
      },
      { timeoutMs: 10_000, message: 'the parent to wait' },
    );

    const res = await t.http().post(`/api/workflows/${parent}/runs/${runId}/cancel`).set(bearer(org.member));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('canceled');
    expect(step(res.body, 'call').status).toBe('canceled');
    const child = await read(sleeper, childRunId);
    expect(child).toMatchObject({ status: 'canceled', error: { code: 'CANCELED', message: 'The run that started it was canceled' } });
    expect(step(child, 'nap').status).toBe('canceled');
  });

  it('refuses to start runs deeper than 5 levels: WORKFLOW_DEPTH, which fails each parent in turn', async () => {
    let next = await defined({ name: 'level 6', steps: [{ id: 'a', ...jsonata('$') }] });
    const chain = [next];
    for (let level = 5; level >= 0; level--) {
      next = await defined({ name: `level ${level}`, steps: [{ id: 'call', workflow: next }] });
      chain.unshift(next);
    }
    const runId = await started(chain[0], {});

    const run = await settled(chain[0], runId);
    expect(run.status).toBe('failed');
    // Down the chain to the run 5 levels deep, whose step could not start another.
    let current = run;
    for (let level = 1; level <= 5; level++) {
      current = await read(chain[level], step(current, 'call').childRunId as string);
      expect(current.status).toBe('failed');
    }
    expect(step(current, 'call')).toMatchObject({ status: 'failed', childRunId: null, error: { code: 'WORKFLOW_DEPTH' } });
  });
});
