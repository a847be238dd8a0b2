import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { answer, FakeLlm, startFakeLlm, toolCalls } from './support/fake-llm';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

jest.setTimeout(60_000);

interface StepRecord {
  id: string;
  status: string;
  childRunId?: string | null;
}
interface RunBody {
  id: string;
  status: string;
  triggeredBy: Record<string, string>;
  steps: StepRecord[];
}

const OWN_RUN = "Step 'approve' may not be approved by whoever started its run";

/**
 * `selfApproval: false` refuses the person who started the run, by whatever path they started
 * it (a personal key, trigger now, a replay, a parent run, an agent's workflow tool) and
 * whatever they answer with; a service account's key has no person and is refused only as itself.
 */
describe('approvals refuse the person who started the run, by every path', () => {
  let t: TestApp;
  let org: TestOrg;
  let colleague: TestUser;
  let llm: FakeLlm;
  let signOff: string;

  beforeAll(async () => {
    llm = await startFakeLlm();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    colleague = await t.addUser(org.id, 'admin');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'test-model' });
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({
        name: 'sign off',
        steps: [{ id: 'approve', wait: { for: 'approval', schema: { type: 'object' }, selfApproval: false } }],
        output: 'steps.approve.output.data',
      });
    expect(res.status).toBe(201);
    signOff = res.body.id as string;
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });

  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  const run = async (workflowId: string, runId: string): Promise<RunBody> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as RunBody;
  };
  const waitingForApproval = (runId: string) =>
    eventually(async () => ((await run(signOff, runId)).steps[0].status === 'waiting' ? true : undefined), {
      timeoutMs: 15_000,
      message: `run ${runId} to wait for its approval`,
    });
  const complete = (headers: Record<string, string>, runId: string) =>
    t
      .http()
      .post(`/api/workflows/${signOff}/runs/${runId}/steps/approve/complete`)
      .set(headers)
      .send({ data: { ok: true } });
  const listed = async (user: TestUser, runId: string) =>
    ((await t.http().get('/api/approvals').set(bearer(user))).body.data as Array<{ runId: string }>).some((a) => a.runId === runId);

  /** The admin who started `runId` is refused (403, and it is not in their approvals); a colleague's answer goes through. */
  async function refusedToStarter(runId: string): Promise<void> {
    await waitingForApproval(runId);
    const own = await complete(bearer(org.admin), runId);
    expect({ status: own.status, error: own.body.error as unknown }).toEqual({
      status: 403,
      error: { code: 'FORBIDDEN', message: OWN_RUN, status: 403 },
    });
    expect(await listed(org.admin, runId)).toBe(false);
    expect(await listed(colleague, runId)).toBe(true);
    expect((await complete(bearer(colleague), runId)).status).toBe(200);
  }

  it('started with a personal API key, answered with the same person’s session', async () => {
    const key = await t.http().post('/api/auth/me/api-keys').set(bearer(org.admin)).send({ name: 'laptop' });
    expect(key.status).toBe(201);
    const started = await t
      .http()
      .post(`/api/workflows/${signOff}/run?wait=0`)
      .set(as(key.body.key as string))
      .send({});
    expect(started.status).toBe(202);
    expect(started.body.triggeredBy).toEqual({ type: 'api_key', id: key.body.id, person: org.admin.id });
    await refusedToStarter(started.body.id as string);
  });

  it("started with a schedule's trigger now", async () => {
    const schedule = await t
      .http()
      .post(`/api/workflows/${signOff}/schedules`)
      .set(bearer(org.admin))
      .send({ cron: '0 0 1 1 *', timezone: 'UTC', enabled: false });
    expect(schedule.status).toBe(201);
    const pressed = await t.http().post(`/api/workflows/${signOff}/schedules/${schedule.body.id}/trigger`).set(bearer(org.admin));
    expect([200, 202]).toContain(pressed.status);
    expect(pressed.body.triggeredBy).toMatchObject({ type: 'schedule', id: schedule.body.id, person: org.admin.id });
    await refusedToStarter(pressed.body.id as string);
  });

  it('held by the child of a run the person started', async () => {
    const parent = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'parent', steps: [{ id: 'child', workflow: signOff }] });
    expect(parent.status).toBe(201);
    const started = await t.http().post(`/api/workflows/${parent.body.id}/run?wait=0`).set(bearer(org.admin)).send({});
    const childRunId = await eventually(async () => (await run(parent.body.id as string, started.body.id as string)).steps[0].childRunId, {
      timeoutMs: 15_000,
      message: 'the child run to start',
    });
    expect((await run(signOff, childRunId!)).triggeredBy).toEqual({ type: 'workflow_run', id: started.body.id, person: org.admin.id });
    await refusedToStarter(childRunId!);
  });

  it("started by replaying a trigger's event (the outside request itself has no person)", async () => {
    const trigger = await t.http().post(`/api/workflows/${signOff}/triggers`).set(bearer(org.admin)).send({ scheme: 'bearer' });
    expect(trigger.status).toBe(201);
    const hooked = await t
      .http()
      .post(`/api/hooks/${trigger.body.id}`)
      .set(as(trigger.body.secret as string))
      .send({ order: 1 });
    expect(hooked.status).toBe(202);
    const outside = hooked.body.runId as string;
    await waitingForApproval(outside);
    expect((await run(signOff, outside)).triggeredBy).not.toHaveProperty('person');
    expect((await complete(bearer(org.admin), outside)).status).toBe(200);

    const replayed = await t
      .http()
      .post(`/api/workflows/${signOff}/triggers/${trigger.body.id}/events/${hooked.body.eventId}/replay`)
      .set(bearer(org.admin));
    expect([200, 202]).toContain(replayed.status);
    const runId = replayed.body.runId as string;
    expect((await run(signOff, runId)).triggeredBy).toMatchObject({ type: 'webhook', person: org.admin.id });
    await refusedToStarter(runId);
  });

  it("started by an agent's workflow tool, in an execution the person started", async () => {
    const agent = await registerAgent(t, org, {
      name: 'clerk',
      kind: 'llm.agent',
      config: { systemPrompt: 'File it.', tools: [{ workflow: signOff, parameters: { type: 'object' } }] },
      maxAttempts: 1,
    });
    llm.script(toolCalls([{ id: 'call_1', name: 'workflow_sign_off', arguments: {} }]), answer('filed'));
    const execution = await t.http().post(`/api/agents/${agent}/execute?wait=0`).set(bearer(org.admin)).send({ input: {} });
    expect(execution.status).toBe(202);
    const runId = await eventually(
      async () => {
        const runs = (await t.http().get(`/api/workflows/${signOff}/runs`).set(bearer(org.viewer))).body.data as RunBody[];
        return runs.find((r) => r.triggeredBy.type === 'agent_execution' && r.triggeredBy.id === execution.body.id)?.id;
      },
      { timeoutMs: 15_000, message: 'the tool to start its run' },
    );
    expect((await run(signOff, runId!)).triggeredBy.person).toBe(org.admin.id);
    await refusedToStarter(runId!);
    const done = await eventually(
      async () => {
        const res = await t.http().get(`/api/agents/${agent}/history/${execution.body.id}`).set(bearer(org.viewer));
        return res.body.status === 'succeeded' ? res.body : undefined;
      },
      { timeoutMs: 15_000, message: 'the execution to finish' },
    );
    expect(done.output).toMatchObject({ text: 'filed', toolCalls: 1 });
  });

  it("refuses a service account's key only as itself: it has no person, and a person answers its run", async () => {
    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'robot', role: 'member' });
    const key = await t.http().post(`/api/service-accounts/${account.body.id}/api-keys`).set(bearer(org.admin)).send({ name: 'ci' });
    expect(key.status).toBe(201);
    const robot = as(key.body.key as string);
    const started = await t.http().post(`/api/workflows/${signOff}/run?wait=0`).set(robot).send({});
    expect(started.body.triggeredBy).toEqual({ type: 'api_key', id: key.body.id, serviceAccountId: account.body.id });
    await waitingForApproval(started.body.id as string);
    const own = await complete(robot, started.body.id as string);
    expect({ status: own.status, message: own.body.error?.message as unknown }).toEqual({ status: 403, message: OWN_RUN });
    expect(await listed(org.admin, started.body.id as string)).toBe(true);
    expect((await complete(bearer(org.admin), started.body.id as string)).status).toBe(200);
  });
});
