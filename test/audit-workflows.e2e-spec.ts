import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { FakeRemoteAgent, HOLD, startFakeRemoteAgent } from './support/fake-remote-agent';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
const HOOK = 'http://127.0.0.1:9/hooks/audit';

interface AuditEventBody {
  action: string;
  actor: { type: string; id: string | null };
  target: { type: string; id: string | null; name: string | null };
  outcome: string;
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null;
}

/**
 * The audit events that workflows, their triggers and schedules, runs, executions and webhook
 * endpoints write when changed through the API: who (the admin), what, which object, what
 * changed, and never a secret.
 */
describe('audit log of workflows, triggers, schedules, runs, executions and webhooks', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/hang': () => HOLD });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    for (const slug of ['transform', 'http']) await install(t, org, slug);
  });
  afterAll(async () => {
    await t.close();
    await remote.close();
  });

  const admin = () => bearer(org.admin);
  const asAdmin = { type: 'user', id: () => org.admin.id };

  /** The events of the target (with this action), newest first. */
  const eventsOf = async (targetId: string, action?: string): Promise<AuditEventBody[]> => {
    const res = await t
      .http()
      .get(`/api/audit-events?targetId=${targetId}${action ? `&action=${action}` : ''}`)
      .set(admin());
    expect(res.status).toBe(200);
    return res.body.data as AuditEventBody[];
  };
  /** The one event of the target with this action, by the admin, a success. */
  const eventOf = async (targetId: string, action: string): Promise<AuditEventBody> => {
    const events = await eventsOf(targetId, action);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ action, outcome: 'success', actor: { type: asAdmin.type, id: asAdmin.id() } });
    return events[0];
  };

  const defineWorkflow = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(admin()).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };

  describe('webhook endpoints', () => {
    it('records create, update, secret rotation and delete, never the signing secret', async () => {
      const created = await t
        .http()
        .post('/api/webhooks')
        .set(admin())
        .send({ url: HOOK, description: 'ops', eventTypes: ['agent.execution.failed'] });
      expect(created.status).toBe(201);
      const { id, secret } = created.body as { id: string; secret: string };
      const patched = await t.http().patch(`/api/webhooks/${id}`).set(admin()).send({ description: 'ops team', enabled: false });
      expect(patched.status).toBe(200);
      const rotated = await t.http().post(`/api/webhooks/${id}/rotate-secret`).set(admin()).send({ graceSeconds: 60 });
      expect(rotated.status).toBe(200);
      const newSecret = rotated.body.secret as string;
      expect((await t.http().delete(`/api/webhooks/${id}`).set(admin())).status).toBe(204);

      const target = { type: 'webhook_endpoint', id, name: HOOK };
      const create = await eventOf(id, 'webhook_endpoint.created');
      expect(create).toMatchObject({ target });
      expect(create.changes).toEqual({ after: { url: HOOK, description: 'ops', eventTypes: ['agent.execution.failed'], enabled: true } });
      const update = await eventOf(id, 'webhook_endpoint.updated');
      expect(update).toMatchObject({ target });
      expect(update.changes).toEqual({ before: { description: 'ops', enabled: true }, after: { description: 'ops team', enabled: false } });
      const rotation = await eventOf(id, 'webhook_endpoint.secret_rotated');
      expect(rotation).toMatchObject({ target, changes: { after: { graceSeconds: 60 } } });
      const deletion = await eventOf(id, 'webhook_endpoint.deleted');
      expect(deletion).toMatchObject({ target, changes: { before: { url: HOOK, description: 'ops team', enabled: false } } });

      for (const event of [create, update, rotation, deletion]) {
        for (const shown of [secret, newSecret, secret.slice('whsec_'.length), newSecret.slice('whsec_'.length)]) {
          expect(JSON.stringify(event)).not.toContain(shown);
        }
      }
    });
  });

  describe('workflows', () => {
    it('records create, a new version and delete, with the version', async () => {
      const id = await defineWorkflow({ name: 'audited flow', steps: [{ id: 'a', ...jsonata('1') }] });
      const redefined = await t
        .http()
        .put(`/api/workflows/${id}`)
        .set(admin())
        .send({ name: 'audited flow v2', steps: [{ id: 'a', ...jsonata('2') }] });
      expect(redefined.status).toBe(200);
      expect(redefined.body.version).toBe(2);
      expect((await t.http().delete(`/api/workflows/${id}`).set(admin())).status).toBe(204);

      expect(await eventOf(id, 'workflow.created')).toMatchObject({
        target: { type: 'workflow', id, name: 'audited flow' },
        changes: { after: { name: 'audited flow', version: 1 } },
      });
      const version = await eventOf(id, 'workflow.version_created');
      expect(version).toMatchObject({ target: { type: 'workflow', id, name: 'audited flow v2' } });
      expect(version.changes).toEqual({ before: { name: 'audited flow', version: 1 }, after: { name: 'audited flow v2', version: 2 } });
      expect(await eventOf(id, 'workflow.deleted')).toMatchObject({
        target: { type: 'workflow', id, name: 'audited flow v2' },
        changes: { before: { name: 'audited flow v2', version: 2 } },
      });
    });
  });

  describe('triggers and schedules', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await defineWorkflow({ name: 'triggered flow', steps: [{ id: 'a', ...jsonata('1') }] });
    });

    it('records trigger create, update, token rotation (as an update) and delete, never the token', async () => {
      const base = `/api/workflows/${workflowId}/triggers`;
      const created = await t.http().post(base).set(admin()).send({ scheme: 'bearer', name: 'from ci' });
      expect(created.status).toBe(201);
      const { id, secret } = created.body as { id: string; secret: string };
      const patched = await t.http().patch(`${base}/${id}`).set(admin()).send({ name: 'from jenkins', enabled: false });
      expect(patched.status).toBe(200);
      const rotated = await t.http().post(`${base}/${id}/rotate-secret`).set(admin()).send({ graceSeconds: 0 });
      expect(rotated.status).toBe(200);
      const newSecret = rotated.body.secret as string;
      expect(newSecret).not.toBe(secret);
      expect((await t.http().delete(`${base}/${id}`).set(admin())).status).toBe(204);

      const create = await eventOf(id, 'trigger.created');
      expect(create).toMatchObject({
        target: { type: 'trigger', id, name: 'from ci' },
        changes: { after: { workflowId, name: 'from ci', scheme: 'bearer', enabled: true } },
      });
      const updates = await eventsOf(id, 'trigger.updated');
      expect(updates).toHaveLength(2);
      // Told apart by what they record, not by their order (two events may share a millisecond).
      const rotation = updates.find((e) => e.changes?.after?.rotated)!;
      const update = updates.find((e) => e !== rotation)!;
      for (const event of updates) expect(event.actor).toMatchObject({ type: 'user', id: org.admin.id });
      expect(update).toMatchObject({ target: { type: 'trigger', id, name: 'from jenkins' } });
      expect(update.changes).toEqual({ before: { name: 'from ci', enabled: true }, after: { name: 'from jenkins', enabled: false } });
      expect(rotation).toMatchObject({
        target: { type: 'trigger', id, name: 'from jenkins' },
        changes: { after: { rotated: true, graceSeconds: 0 } },
      });
      const deletion = await eventOf(id, 'trigger.deleted');
      expect(deletion).toMatchObject({
        target: { type: 'trigger', id, name: 'from jenkins' },
        changes: { before: { name: 'from jenkins' } },
      });

      for (const event of [create, update, rotation, deletion]) {
        expect(JSON.stringify(event)).not.toContain(secret);
        expect(JSON.stringify(event)).not.toContain(newSecret);
      }
    });

    it('records schedule create, update (a change and a pause) and delete', async () => {
      const base = `/api/workflows/${workflowId}/schedules`;
      const created = await t
        .http()
        .post(base)
        .set(admin())
        .send({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', input: { n: 1 } });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect((await t.http().patch(`${base}/${id}`).set(admin()).send({ cron: '30 9 * * 1-5' })).status).toBe(200);
      expect((await t.http().post(`${base}/${id}/pause`).set(admin())).status).toBe(200);
      expect((await t.http().delete(`${base}/${id}`).set(admin())).status).toBe(204);

      expect(await eventOf(id, 'schedule.created')).toMatchObject({
        target: { type: 'schedule', id, name: '0 9 * * 1-5 (Europe/Berlin)' },
        changes: {
          after: {
            workflowId,
            cron: '0 9 * * 1-5',
            timezone: 'Europe/Berlin',
            input: { n: 1 },
            overlap: 'skip',
            catchUp: 'latest',
            enabled: true,
          },
        },
      });
      const updates = await eventsOf(id, 'schedule.updated');
      expect(updates).toHaveLength(2);
      const change = updates.find((e) => e.changes?.after?.cron)!;
      const pause = updates.find((e) => e !== change)!;
      expect(change).toMatchObject({ actor: { type: 'user', id: org.admin.id }, target: { name: '30 9 * * 1-5 (Europe/Berlin)' } });
      expect(change.changes).toEqual({ before: { cron: '0 9 * * 1-5' }, after: { cron: '30 9 * * 1-5' } });
      expect(pause).toMatchObject({ actor: { type: 'user', id: org.admin.id } });
      expect(pause.changes).toEqual({ before: { enabled: true }, after: { enabled: false } });
      expect(await eventOf(id, 'schedule.deleted')).toMatchObject({
        target: { type: 'schedule', id, name: '30 9 * * 1-5 (Europe/Berlin)' },
        changes: { before: { cron: '30 9 * * 1-5', enabled: false } },
      });
    });
  });

  describe('runs', () => {
    interface RunBody {
      id: string;
      status: string;
      retriedBy: string | null;
      steps: Array<{ id: string; status: string }>;
    }
    const getRun = async (workflowId: string, runId: string): Promise<RunBody> =>
      (await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(admin())).body as RunBody;
    const waitingAt = (workflowId: string, runId: string, stepId: string) =>
      eventually(
        async () => {
          const run = await getRun(workflowId, runId);
          return run.status === 'waiting' && run.steps.some((s) => s.id === stepId && s.status === 'waiting') ? run : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 25, message: `run ${runId} to wait at ${stepId}` },
      );

    it('records a cancel, a retry and an answered approval by the admin, with the answer', async () => {
      const workflowId = await defineWorkflow({
        name: 'expense',
        steps: [
          { id: 'prepare', ...jsonata('{ "amount": input.amount }') },
          {
            id: 'approve',
            needs: ['prepare'],
            wait: {
              for: 'approval',
              approvers: { roles: ['admin'] },
              selfApproval: true,
              schema: { type: 'object', required: ['approved'], properties: { approved: { type: 'boolean' } } },
            },
          },
        ],
      });
      const started = await t
        .http()
        .post(`/api/workflows/${workflowId}/run?wait=0`)
        .set(admin())
        .send({ input: { amount: 40 } });
      expect([200, 202]).toContain(started.status);
      const first = started.body.id as string;
      await waitingAt(workflowId, first, 'approve');

      const canceled = await t.http().post(`/api/workflows/${workflowId}/runs/${first}/cancel`).set(admin());
      expect(canceled.status).toBe(200);
      expect(await eventOf(first, 'run.canceled')).toMatchObject({
        target: { type: 'run', id: first },
        changes: { after: { status: 'canceled', workflowId, workflowVersion: 1 } },
      });

      const retried = await t.http().post(`/api/workflows/${workflowId}/runs/${first}/retry?wait=0`).set(admin()).send({});
      expect([200, 202]).toContain(retried.status);
      const second = retried.body.id as string;
      expect(await eventOf(first, 'run.retried')).toMatchObject({
        target: { type: 'run', id: first },
        changes: { after: { retriedBy: second, fromStep: null, workflowId, workflowVersion: 1 } },
      });

      await waitingAt(workflowId, second, 'approve');
      const answered = await t
        .http()
        .post(`/api/workflows/${workflowId}/runs/${second}/steps/approve/complete`)
        .set(admin())
        .send({ data: { approved: true } });
      expect(answered.status).toBe(200);
      expect(await eventOf(second, 'run.approved')).toMatchObject({
        target: { type: 'run', id: second },
        changes: { after: { stepId: 'approve', for: 'approval', workflowId, answer: { approved: true } } },
      });
      // The engine's own changes (the retried run going on and finishing) are not audited.
      await eventually(async () => (await getRun(workflowId, second)).status === 'succeeded', {
        timeoutMs: 15_000,
        intervalMs: 25,
        message: `run ${second} to finish`,
      });
      expect((await eventsOf(second)).map((e) => e.action)).toEqual(['run.approved']);
    });
  });

  describe('executions', () => {
    it('records a cancel and a retry by the admin', async () => {
      const agentId = await registerAgent(t, org, { name: 'hanging', kind: 'http.agent', config: { url: `${remote.url}/hang` } });
      const executed = await t.http().post(`/api/agents/${agentId}/execute?wait=0`).set(admin()).send({ input: {} });
      expect([200, 202]).toContain(executed.status);
      const first = executed.body.id as string;

      const canceled = await t.http().post(`/api/agents/${agentId}/history/${first}/cancel`).set(admin());
      expect(canceled.status).toBe(200);
      expect(await eventOf(first, 'execution.canceled')).toMatchObject({
        target: { type: 'execution', id: first, name: 'hanging' },
        changes: { after: { status: 'canceled', agentId } },
      });

      const retried = await t.http().post(`/api/agents/${agentId}/history/${first}/retry?wait=0`).set(admin());
      expect([200, 202]).toContain(retried.status);
      const second = retried.body.id as string;
      expect(await eventOf(first, 'execution.retried')).toMatchObject({
        target: { type: 'execution', id: first, name: 'hanging' },
        changes: { after: { retriedBy: second, agentId } },
      });

      // The retry hangs too: canceled, so nothing is left running.
      expect((await t.http().post(`/api/agents/${agentId}/history/${second}/cancel`).set(admin())).status).toBe(200);
      expect(await eventOf(second, 'execution.canceled')).toMatchObject({ target: { type: 'execution', id: second } });
    });
  });
});
