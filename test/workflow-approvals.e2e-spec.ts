import { withKey } from './support/api-keys';
import { install } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

interface StepRecord {
  id: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
  resumeAt: string | null;
  waitingFor: { for: string; event: string | null; key: string | null; approvers: unknown; timeoutAt: string | null } | null;
}
interface RunBody {
  id: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
  steps: StepRecord[];
  waitingSteps?: Array<{ id: string; resumeAt: string | null; waitingFor: unknown }>;
}

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
const ANSWER_SCHEMA = {
  type: 'object',
  required: ['approved'],
  properties: { approved: { type: 'boolean' } },
  additionalProperties: false,
};

// Wait steps as people and systems answer them: approvals through the API, events by name and key.
describe('workflow approvals and events', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  const define = (definition: Record<string, unknown>) => t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await define(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const start = async (id: string, input: unknown, as: TestUser = org.member): Promise<RunBody> => {
    const res = await t.http().post(`/api/workflows/${id}/run?wait=0`).set(bearer(as)).send({ input });
    expect([200, 202]).toContain(res.status);
    return res.body as RunBody;
  };
  const get = async (workflowId: string, runId: string): Promise<RunBody> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as RunBody;
  };
  const until = (workflowId: string, runId: string, what: string, seen: (run: RunBody) => boolean) => {
    let last: unknown;
    return eventually(
      async () => {
        const body = await get(workflowId, runId);
        last = { status: body.status, steps: body.steps.map((s) => [s.id, s.status]) };
        return seen(body) ? body : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 25, message: () => `${what} (last seen ${JSON.stringify(last)})` },
    );
  };
  /** The run once it let go of its worker with the step waiting. */
  const waiting = (workflowId: string, runId: string, stepId: string) =>
    until(
      workflowId,
      runId,
      `step ${stepId} waiting`,
      (r) => r.status === 'waiting' && r.steps.some((s) => s.id === stepId && s.status === 'waiting'),
    );
  const settled = (workflowId: string, runId: string) =>
    until(workflowId, runId, 'the run to finish', (r) => !['queued', 'running', 'waiting'].includes(r.status));
  const complete = (as: TestUser, workflowId: string, runId: string, stepId: string, data: unknown) =>
    t.http().post(`/api/workflows/${workflowId}/runs/${runId}/steps/${stepId}/complete`).set(bearer(as)).send({ data });
  const send = (event: Record<string, unknown>, as: TestUser = org.member) => t.http().post('/api/events').set(bearer(as)).send(event);
  const step = (run: RunBody, id: string) => run.steps.find((s) => s.id === id)!;

  describe('definition', () => {
    it('refuses waits that could not work, naming each problem', async () => {
      const bad = [
        { id: 'a', wait: { for: 'event' } },
        { id: 'b', wait: { for: 'approval', event: 'x', key: 'input.id' } },
        { id: 'c', wait: { for: 'event', event: 'paid', approvers: { roles: ['admin'] }, timeoutSeconds: 60 } },
        { id: 'd', wait: { for: 'approval', schema: { type: 'nope' } } },
      ];
      const res = await define({
        name: 'bad waits',
        timeoutMs: 60_000,
        steps: [...bad, { id: 'e', wait: { for: 'approval', approvers: { roles: ['viewer'] } } }],
      });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('WORKFLOW_INVALID');
      const paths = (res.body.error.details as Array<{ path: string }>).map((d) => d.path);
      // The shape first: a viewer cannot approve (it may change nothing).
      expect(paths).toEqual(['steps[4].wait.approvers.roles[0]']);
      const again = await define({ name: 'bad waits', timeoutMs: 60_000, steps: bad });
      expect(again.status).toBe(400);
      const details = again.body.error.details as Array<{ path: string; message: string }>;
      expect(details.map((d) => d.path)).toEqual(
        expect.arrayContaining([
          'steps[0].wait.event',
          'steps[1].wait.event',
          'steps[1].wait.key',
          'steps[2].wait.approvers',
          'steps[2].wait.timeoutSeconds',
        ]),
      );
      expect(details.some((d) => d.path.startsWith('steps[3].wait.schema'))).toBe(true);
      expect(details.find((d) => d.path === 'steps[2].wait.timeoutSeconds')!.message).toContain("past the run's timeoutMs (60000)");
    });
  });

  describe('approval', () => {
    let workflow: string;
    beforeAll(async () => {
      workflow = await defined({
        name: 'expense',
        steps: [
          { id: 'prepare', ...jsonata('{ "amount": input.amount }') },
          {
            id: 'approve',
            needs: ['prepare'],
            wait: { for: 'approval', schema: ANSWER_SCHEMA, approvers: { roles: ['admin'] }, selfApproval: false },
          },
          { id: 'book', needs: ['approve'], input: 'steps.approve.output.data', ...jsonata('approved ? "booked" : "refused"') },
        ],
      });
    });

    it('waits for an approver, refuses others and bad answers, then goes on with the answer', async () => {
      const run = await start(workflow, { amount: 40 });
      const parked = await waiting(workflow, run.id, 'approve');
      expect(parked.status).toBe('waiting');
      expect(step(parked, 'approve').waitingFor).toEqual({
        for: 'approval',
        event: null,
        key: null,
        approvers: { roles: ['admin'] },
        timeoutAt: null,
      });
      expect(parked.waitingSteps).toEqual([{ id: 'approve', resumeAt: null, waitingFor: step(parked, 'approve').waitingFor }]);

      // It waits on the admins, not on the member who started it.
      const listed = await t.http().get('/api/approvals?status=pending').set(bearer(org.admin));
      expect(listed.status).toBe(200);
      expect(listed.body.data).toContainEqual(
        expect.objectContaining({
          workflowId: workflow,
          runId: run.id,
          stepId: 'approve',
          schema: ANSWER_SCHEMA,
          completeUrl: `/api/workflows/${workflow}/runs/${run.id}/steps/approve/complete`,
        }),
      );
      const notMine = await t.http().get('/api/approvals').set(bearer(org.member));
      expect(notMine.body.data.filter((a: { runId: string }) => a.runId === run.id)).toEqual([]);

      const byMember = await complete(org.member, workflow, run.id, 'approve', { approved: true });
      expect(byMember.status).toBe(403);
      expect(byMember.body.error).toMatchObject({
        code: 'FORBIDDEN',
        status: 403,
        message: "You are not one of the approvers of step 'approve'",
      });
      expect((await complete(org.viewer, workflow, run.id, 'approve', { approved: true })).status).toBe(403);
      const elsewhere = await complete(other.admin, workflow, run.id, 'approve', { approved: true });
      expect(elsewhere.status).toBe(404);
      expect(elsewhere.body.error.code).toBe('RUN_NOT_FOUND');
      const bad = await complete(org.admin, workflow, run.id, 'approve', { approved: 'yes' });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: 'data.approved' })] });
      const unknown = await complete(org.admin, workflow, run.id, 'nope', {});
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('STEP_NOT_FOUND');
      const notAWait = await complete(org.admin, workflow, run.id, 'prepare', {});
      expect(notAWait.status).toBe(409);
      expect(notAWait.body.error.code).toBe('STEP_NOT_WAITING');

      const approved = await complete(org.admin, workflow, run.id, 'approve', { approved: true });
      expect(approved.status).toBe(200);
      expect(approved.body).toEqual({
        runId: run.id,
        stepId: 'approve',
        output: { data: { approved: true }, by: { type: 'user', id: org.admin.id, email: org.admin.email }, at: expect.any(String) },
      });
      const twice = await complete(org.admin, workflow, run.id, 'approve', { approved: false });
      expect(twice.status).toBe(409);
      expect(twice.body.error).toMatchObject({ code: 'STEP_NOT_WAITING', message: "Step 'approve' was answered already" });

      const done = await settled(workflow, run.id);
      expect(done.status).toBe('succeeded');
      expect(step(done, 'approve').output).toEqual(approved.body.output);
      expect(step(done, 'book').output).toBe('booked');
      const after = await t.http().get('/api/approvals').set(bearer(org.admin));
      expect(after.body.data.filter((a: { runId: string }) => a.runId === run.id)).toEqual([]);
    });

    it('does not let whoever started the run approve it when selfApproval is false', async () => {
      const run = await start(workflow, { amount: 5 }, org.admin);
      await waiting(workflow, run.id, 'approve');
      const own = await complete(org.admin, workflow, run.id, 'approve', { approved: true });
      expect(own.status).toBe(403);
      expect(own.body.error.message).toBe("Step 'approve' may not be approved by whoever started its run");
      const mine = await t.http().get('/api/approvals').set(bearer(org.admin));
      expect(mine.body.data.filter((a: { runId: string }) => a.runId === run.id)).toEqual([]);
      const colleague = await t.addUser(org.id, 'admin');
      expect((await complete(colleague, workflow, run.id, 'approve', { approved: false })).status).toBe(200);
      const done = await settled(workflow, run.id);
      expect(step(done, 'book').output).toBe('refused');
    });

    it('answers a canceled run with 409', async () => {
      const run = await start(workflow, { amount: 1 });
      await waiting(workflow, run.id, 'approve');
      expect((await t.http().post(`/api/workflows/${workflow}/runs/${run.id}/cancel`).set(bearer(org.member))).status).toBe(200);
      const late = await complete(org.admin, workflow, run.id, 'approve', { approved: true });
      expect(late.status).toBe(409);
      expect(late.body.error.code).toBe('STEP_NOT_WAITING');
      const canceled = await get(workflow, run.id);
      expect(step(canceled, 'approve')).toMatchObject({ status: 'canceled', waitingFor: { for: 'approval' } });
    });

    it('times out: fails with WAIT_TIMEOUT, or goes on with onTimeout continue', async () => {
      const [failing, going] = await Promise.all(
        (['fail', 'continue'] as const).map((onTimeout) =>
          defined({ name: `timeout ${onTimeout}`, steps: [{ id: 'approve', wait: { for: 'approval', timeoutSeconds: 1, onTimeout } }] }),
        ),
      );
      const [a, b] = await Promise.all([start(failing, null), start(going, null)]);
      const parked = await waiting(failing, a.id, 'approve');
      expect(step(parked, 'approve').resumeAt).toBe(step(parked, 'approve').waitingFor!.timeoutAt);
      const failed = await settled(failing, a.id);
      expect(failed.status).toBe('failed');
      expect(step(failed, 'approve').error).toEqual({
        code: 'WAIT_TIMEOUT',
        message: expect.stringMatching(/^Step 'approve' waited for an approval until .+ and none came$/),
      });
      const went = await settled(going, b.id);
      expect(went.status).toBe('succeeded');
      expect(step(went, 'approve').output).toEqual({ data: null, by: null, at: expect.any(String), timedOut: true });
      expect((await complete(org.admin, failing, a.id, 'approve', {})).status).toBe(409);
    });
  });

  describe('events', () => {
    let workflow: string;
    beforeAll(async () => {
      workflow = await defined({
        name: 'await payment',
        steps: [{ id: 'paid', wait: { for: 'event', event: 'payment.settled', key: 'input.order', schema: { type: 'object' } } }],
        output: 'steps.paid.output.data',
      });
    });

    it('answers the waits for its name and key only, every one of them', async () => {
      const [a1, a2, b] = await Promise.all([
        start(workflow, { order: 'A-1' }),
        start(workflow, { order: 'A-1' }),
        start(workflow, { order: 'B-2' }),
      ]);
      for (const run of [a1, a2, b]) await waiting(workflow, run.id, 'paid');
      expect(step(await get(workflow, b.id), 'paid').waitingFor).toMatchObject({ for: 'event', event: 'payment.settled', key: 'B-2' });

      const wrongName = await send({ name: 'payment.failed', key: 'A-1', data: {} });
      expect(wrongName.status).toBe(202);
      expect(wrongName.body).toEqual({ name: 'payment.failed', key: 'A-1', answered: 0, kept: true });
      const sent = await send({ name: 'payment.settled', key: 'A-1', data: { amount: 42 } });
      expect(sent.status).toBe(202);
      expect(sent.body).toEqual({ name: 'payment.settled', key: 'A-1', answered: 2, kept: false });
      for (const run of [a1, a2]) {
        const done = await settled(workflow, run.id);
        expect(done).toMatchObject({ status: 'succeeded', output: { amount: 42 } });
        expect(step(done, 'paid').output).toEqual({
          data: { amount: 42 },
          by: { type: 'event', name: 'payment.settled' },
          at: expect.any(String),
        });
      }
      expect((await get(workflow, b.id)).status).toBe('waiting');
      // Another organization's event of the same name and key reaches nothing here.
      expect((await send({ name: 'payment.settled', key: 'B-2', data: {} }, other.member)).body.answered).toBe(0);
      expect((await get(workflow, b.id)).status).toBe('waiting');
      expect((await send({ name: 'payment.settled', key: 'B-2', data: { amount: 7 } })).body.answered).toBe(1);
      expect((await settled(workflow, b.id)).output).toEqual({ amount: 7 });
    });

    it('keeps an event no wait took for a wait that begins just after it', async () => {
      const early = await send({ name: 'payment.settled', key: 'C-3', data: { amount: 9 } });
      expect(early.body).toEqual({ name: 'payment.settled', key: 'C-3', answered: 0, kept: true });
      const run = await start(workflow, { order: 'C-3' });
      const done = await settled(workflow, run.id);
      expect(done).toMatchObject({ status: 'succeeded', output: { amount: 9 } });
    });

    it('refuses bad events and callers without the right', async () => {
      const bad = await send({ name: ' spaces ', key: 7 });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('VALIDATION_FAILED');
      expect([...new Set((bad.body.error.details as Array<{ path: string }>).map((d) => d.path))].sort()).toEqual(['key', 'name']);
      expect((await send({ name: 'x' }, org.viewer)).status).toBe(403);
      const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'reader', role: 'member' });
      const key = await t
        .http()
        .post(`/api/service-accounts/${account.body.id}/api-keys`)
        .set(bearer(org.admin))
        .send({ name: 'read only', scopes: ['workflows:read'] });
      expect(key.status).toBe(201);
      const refused = await t.http().post('/api/events').set(withKey(key.body.key)).send({ name: 'x' });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
    });
  });
});
