import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, keyAfter, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * A workflow's concurrency limit across two workers (this process and a worker process of its
 * own, on one Postgres): the limit is counted in the database, so it holds whichever worker
 * takes a run, and a worker killed with SIGKILL leaves no place held and no run waiting forever.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', WORKER_CONCURRENCY: '4' };

jest.setTimeout(120_000);

interface Interval {
  run_id: string;
  started: Date;
  finished: Date;
}

/** The most intervals that overlap at any instant (one ending as another starts do not). */
function mostAtOnce(intervals: Interval[]): number {
  const edges = intervals.flatMap((i) => [
    { at: i.started.getTime(), delta: 1 },
    { at: i.finished.getTime(), delta: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (now += edge.delta));
  return most;
}

describe('workflow concurrency across workers', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let db: DataSource;
  let agent: string;
  let worker: ServiceProcess | null = null;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/step': keyAfter(150) });
    t = await createTestApp({ env: { SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    db = t.app.get(DataSource);
    org = await t.newOrg('enterprise');
    await install(t, org, 'http');
    agent = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/step` }, timeoutMs: 5000, maxAttempts: 1 });
    worker = await startService(WORKER_ENV);
  });
  afterAll(async () => {
    await worker?.kill();
    await t.close();
    await remote.close();
  });

  const defined = async (concurrency: Record<string, unknown>): Promise<string> => {
    const steps = [
      { id: 'first', agent },
      { id: 'second', agent, needs: ['first'] },
    ];
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send({ name: 'limited', steps, concurrency });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const started = (workflowId: string, inputs: unknown[]): Promise<string[]> =>
    Promise.all(
      inputs.map(async (input) => {
        const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input });
        expect(res.status).toBe(202);
        return res.body.id as string;
      }),
    );
  const untilFinished = (ids: string[], timeoutMs = 60_000) =>
    eventually(
      async () => {
        const rows = await db.query<Array<{ status: string }>>('SELECT status FROM workflow_runs WHERE id = ANY($1::uuid[])', [ids]);
        return rows.every((r) => !['queued', 'running', 'waiting'].includes(r.status)) ? rows : undefined;
      },
      { timeoutMs, intervalMs: 100, message: `${ids.length} runs to finish` },
    );
  /** Each run from its first step's start to its last step's end, as the step records say. */
  const intervals = (ids: string[]) =>
    db.query<Interval[]>(
      `SELECT run_id, min(started_at) AS started, max(finished_at) AS finished FROM workflow_run_steps
       WHERE run_id = ANY($1::uuid[]) GROUP BY run_id`,
      [ids],
    );

  it('never has more than 2 of 10 runs of one key in progress across two workers, and finishes them all', async () => {
    const workflowId = await defined({ limit: 2, key: 'input.tenant' });
    const ids = await started(
      workflowId,
      Array.from({ length: 10 }, () => ({ tenant: 'acme' })),
    );
    const rows = await untilFinished(ids);
    expect(rows.map((r) => r.status)).toEqual(Array(10).fill('succeeded'));
    const spans = await intervals(ids);
    expect(spans).toHaveLength(10);
    expect(mostAtOnce(spans)).toBe(2);
  });

  it('lets different keys go at once: two keys with limit 1 each run side by side', async () => {
    const workflowId = await defined({ limit: 1, key: 'input.tenant' });
    const ids = await started(workflowId, [{ tenant: 'a' }, { tenant: 'b' }, { tenant: 'a' }, { tenant: 'b' }]);
    await untilFinished(ids);
    const spans = await intervals(ids);
    const byKey = (n: number) => spans.filter((s) => [ids[n], ids[n + 2]].includes(s.run_id));
    expect(mostAtOnce(byKey(0))).toBe(1);
    expect(mostAtOnce(byKey(1))).toBe(1);
    expect(mostAtOnce(spans)).toBe(2);
  });

  it('finishes every run of a key, within the limit, when the worker process is killed with SIGKILL while they go', async () => {
    const workflowId = await defined({ limit: 2, key: 'input.tenant' });
    const ids = await started(
      workflowId,
      Array.from({ length: 8 }, () => ({ tenant: 'acme' })),
    );
    await remote.callsInFlight();
    await worker!.kill('SIGKILL');
    worker = await startService(WORKER_ENV);
    const rows = await untilFinished(ids, 90_000);
    expect(rows.map((r) => r.status)).toEqual(Array(8).fill('succeeded'));
    // A run whose worker died kept its place until it was taken up again.
    expect(mostAtOnce(await intervals(ids))).toBeLessThanOrEqual(2);
    // Places are counted from the records: none is held by an ended run, none waits.
    const [{ holding }] = await db.query<Array<{ holding: number }>>(
      `SELECT count(*)::int AS holding FROM workflow_runs WHERE workflow_id = $1 AND status IN ('queued', 'running', 'waiting')`,
      [workflowId],
    );
    expect(holding).toBe(0);
  });
});
