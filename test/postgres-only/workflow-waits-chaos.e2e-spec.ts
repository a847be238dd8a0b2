import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, keyAfter, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Runs that wait (a 20 s sleep, a map of 200 items, a parent waiting for its child) while their
 * worker process is killed with SIGKILL: real worker processes, an agent on loopback that
 * records every call under its key (`<runId>:<stepId>`, `<runId>:<stepId>:<index>` for an item).
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', WORKER_CONCURRENCY: '4' };

jest.setTimeout(300_000);

interface StepRow {
  run_id: string;
  step_id: string;
  status: string;
  output: unknown;
  resume_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
}

describe('waiting runs under SIGKILL', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let agent: string;
  let db: DataSource;
  let worker: ServiceProcess | null = null;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/step': keyAfter(200) });
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    db = t.app.get(DataSource);
    org = await t.newOrg('enterprise');
    // 1,000 runs started and canceled, and the polling between: past the tier's 2,000 requests a minute.
    expect((await t.http().patch('/api/subscription').set(bearer(org.admin)).send({ rateLimitPerMinute: 20_000 })).status).toBe(200);
    await install(t, org, 'http');
    agent = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/step` }, timeoutMs: 5000, maxAttempts: 1 });
  });
  afterAll(async () => {
    await worker?.kill();
    await t.close();
    await remote.close();
  });

  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const started = async (workflowId: string, count: number): Promise<string[]> =>
    Promise.all(
      Array.from({ length: count }, async () => {
        const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
        expect(res.status).toBe(202);
        return res.body.id as string;
      }),
    );
  const statuses = async (ids: string[]) =>
    db.query<Array<{ id: string; status: string }>>('SELECT id, status FROM workflow_runs WHERE id = ANY($1::uuid[])', [ids]);
  const untilFinished = (ids: string[], timeoutMs = 120_000) =>
    eventually(async () => (await statuses(ids)).every((r) => !['queued', 'running', 'waiting'].includes(r.status)), {
      timeoutMs,
      intervalMs: 250,
      message: `${ids.length} runs to finish`,
    });
  const steps = (ids: string[]) =>
    db.query<StepRow[]>('SELECT * FROM workflow_run_steps WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, position', [ids]);
  /** The worker is killed with SIGKILL, and a new one takes its place. */
  const killWorker = async () => {
    await worker!.kill('SIGKILL');
    worker = await startService(WORKER_ENV);
  };
  /** No call of a key after its result was committed. */
  const calledOnlyBeforeCommit = (key: string, committedAt: Date | null) => {
    const calls = remote.calls.get(key) ?? [];
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(call.at).toBeLessThanOrEqual(committedAt!.getTime() + 1);
  };

  it('ends a 20 s sleep within 2 s of its due time when its worker was killed during it; nothing runs again', async () => {
    const workflowId = await defined({
      name: 'long nap',
      steps: [
        { id: 'before', agent },
        { id: 'nap', sleep: { seconds: 20 }, needs: ['before'] },
        { id: 'after', agent, needs: ['nap'] },
      ],
    });
    worker = await startService(WORKER_ENV);
    const ids = await started(workflowId, 5);
    // Each sleep is recorded, then its run lets go of its worker.
    const due = await eventually(
      async () => {
        const rows = (await steps(ids)).filter((s) => s.step_id === 'nap' && s.status === 'waiting');
        const parked = (await statuses(ids)).every((r) => r.status === 'waiting');
        return parked && rows.length === ids.length && new Map(rows.map((s) => [s.run_id, s.resume_at!.getTime()]));
      },
      { timeoutMs: 30_000, message: 'every run to sleep' },
    );
    await killWorker();

    await untilFinished(ids);
    const rows = await steps(ids);
    for (const id of ids) {
      expect((await statuses([id]))[0].status).toBe('succeeded');
      const [before, nap, after] = rows.filter((s) => s.run_id === id);
      // The wait was not started over: it ended at the time fixed before the kill.
      expect(nap).toMatchObject({ status: 'succeeded', output: { until: new Date(due.get(id)!).toISOString() } });
      const afterCall = remote.calls.get(`${id}:after`)![0].at;
      expect(afterCall).toBeGreaterThanOrEqual(due.get(id)!);
      expect(afterCall - due.get(id)!).toBeLessThan(2000);
      calledOnlyBeforeCommit(`${id}:before`, before.finished_at);
      expect(remote.calls.get(`${id}:before`)).toHaveLength(1);
      expect(after.status).toBe('succeeded');
    }
  });

  it('runs again only the items in flight when the worker of a map of 200 items is killed', async () => {
    const workflowId = await defined({
      name: 'map of 200',
      steps: [{ id: 'each', map: { over: '[1..200]', step: { agent }, concurrency: 10 } }],
    });
    const [id] = await started(workflowId, 1);
    await eventually(
      async () => {
        const [row] = await db.query<Array<{ done: string }>>(
          `SELECT count(*) AS done FROM workflow_run_items WHERE run_id = $1 AND status = 'succeeded'`,
          [id],
        );
        return Number(row.done) >= 40;
      },
      { timeoutMs: 60_000, message: 'the map to be under way' },
    );
    await killWorker();

    await untilFinished([id]);
    expect((await statuses([id]))[0].status).toBe('succeeded');
    const items = await db.query<Array<{ index: number; status: string; finished_at: Date }>>(
      'SELECT index, status, finished_at FROM workflow_run_items WHERE run_id = $1 ORDER BY index',
      [id],
    );
    expect(items).toHaveLength(200);
    for (const item of items) {
      expect(item.status).toBe('succeeded');
      calledOnlyBeforeCommit(`${id}:each:${item.index}`, item.finished_at);
    }
    const [each] = await steps([id]);
    expect((each.output as unknown[]).map((o) => (o as { key: string }).key)).toEqual(items.map((i) => `${id}:each:${i.index}`));
    // Items in flight at the kill ran again under their same key; the others ran once.
    const repeated = items.filter((i) => remote.calls.get(`${id}:each:${i.index}`)!.length > 1).length;
    expect(repeated).toBeLessThanOrEqual(10);
  });

  it('finishes a parent whose worker was killed while it waited for its child', async () => {
    const child = await defined({
      name: 'sleepy child',
      steps: [
        { id: 'nap', sleep: { seconds: 3 } },
        { id: 'work', agent, needs: ['nap'] },
      ],
    });
    const parent = await defined({
      name: 'parent',
      steps: [
        { id: 'call', workflow: child },
        { id: 'after', agent, needs: ['call'] },
      ],
    });
    const ids = await started(parent, 3);
    await eventually(async () => (await statuses(ids)).every((r) => r.status === 'waiting'), {
      timeoutMs: 30_000,
      message: 'the parents to wait',
    });
    await killWorker();

    await untilFinished(ids);
    const rows = await steps(ids);
    for (const id of ids) {
      expect((await statuses([id]))[0].status).toBe('succeeded');
      const [call, after] = rows.filter((s) => s.run_id === id);
      expect(call.status).toBe('succeeded');
      const [childRun] = await db.query<Array<{ id: string; status: string }>>(
        'SELECT id, status FROM workflow_runs WHERE parent_run_id = $1',
        [id],
      );
      expect(childRun.status).toBe('succeeded');
      expect(call.output).toEqual({ work: { key: `${childRun.id}:work` }, nap: expect.anything() });
      expect(remote.calls.get(`${childRun.id}:work`)).toHaveLength(1);
      calledOnlyBeforeCommit(`${id}:after`, after.finished_at);
    }
  });

  it('takes an approval and fires a timeout after the worker was killed while the runs waited', async () => {
    const workflowId = await defined({
      name: 'sign-off',
      steps: [
        { id: 'before', agent },
        { id: 'approve', wait: { for: 'approval', timeoutSeconds: 8, onTimeout: 'continue' }, needs: ['before'] },
        { id: 'after', agent, needs: ['approve'] },
      ],
    });
    worker ??= await startService(WORKER_ENV);
    const [answered, unanswered] = await started(workflowId, 2);
    await eventually(
      async () => (await steps([answered, unanswered])).filter((s) => s.step_id === 'approve' && s.status === 'waiting').length === 2,
      { timeoutMs: 30_000, message: 'both runs to wait for their approval' },
    );
    // Answered while no worker lives: the next one takes the answer; the other run's timeout fires on its own.
    await worker!.kill('SIGKILL');
    const res = await t
      .http()
      .post(`/api/workflows/${workflowId}/runs/${answered}/steps/approve/complete`)
      .set(bearer(org.admin))
      .send({ data: { ok: true } });
    expect(res.status).toBe(200);
    worker = await startService(WORKER_ENV);

    await untilFinished([answered, unanswered], 60_000);
    for (const id of [answered, unanswered]) expect((await statuses([id]))[0].status).toBe('succeeded');
    const rows = await steps([answered, unanswered]);
    const approval = (id: string) => rows.find((s) => s.run_id === id && s.step_id === 'approve')!.output;
    expect(approval(answered)).toMatchObject({ data: { ok: true }, by: { type: 'user', id: org.admin.id } });
    expect(approval(unanswered)).toMatchObject({ data: null, timedOut: true });
    for (const id of [answered, unanswered]) {
      calledOnlyBeforeCommit(`${id}:before`, rows.find((s) => s.run_id === id && s.step_id === 'before')!.finished_at);
      expect(remote.calls.get(`${id}:after`)).toHaveLength(1);
    }
  });

  it('holds no worker slot for 1,000 sleeping runs: another run goes through meanwhile', async () => {
    const sleeper = await defined({ name: 'sleeps an hour', timeoutMs: 7_200_000, steps: [{ id: 'nap', sleep: { seconds: 3600 } }] });
    const quick = await defined({ name: 'quick', steps: [{ id: 'work', agent }] });
    worker ??= await startService(WORKER_ENV);
    const ids: string[] = [];
    for (let i = 0; i < 1000; i += 50) ids.push(...(await started(sleeper, 50)));
    await eventually(async () => (await statuses(ids)).every((r) => r.status === 'waiting'), {
      timeoutMs: 120_000,
      intervalMs: 500,
      message: '1,000 runs to sleep',
    });

    const [active] = await db.query<Array<{ count: string }>>(
      `SELECT count(*) AS count FROM pgboss.job WHERE name = 'workflow-run' AND state = 'active'`,
    );
    expect(Number(active.count)).toBe(0);
    const res = await t.http().post(`/api/workflows/${quick}/run?wait=30`).set(bearer(org.member)).send({ input: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', steps: [{ id: 'work', status: 'succeeded' }] });

    // Their cancel reaches no worker: nothing holds them.
    for (let i = 0; i < ids.length; i += 50) {
      const canceled = await Promise.all(
        ids.slice(i, i + 50).map((id) => t.http().post(`/api/workflows/${sleeper}/runs/${id}/cancel`).set(bearer(org.member))),
      );
      for (const c of canceled) expect(c.body.status).toBe('canceled');
    }
  });
});
