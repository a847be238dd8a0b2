import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, keyAfter, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { startTcpProxy } from '../support/tcp-proxy';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Real worker processes run 5-step workflows whose steps call a loopback agent that records
 * every call under its key `<runId>:<stepId>`; the workers are killed with SIGKILL, or lose
 * their database, while steps are in flight.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', WORKER_CONCURRENCY: '4' };
const STEP_IDS = ['fetch', 'left', 'right', 'merge', 'report'];

jest.setTimeout(300_000);

interface RunRow {
  id: string;
  status: string;
  steps: Array<{ step_id: string; status: string; output: { key?: string } | null; finished_at: Date }>;
}

describe('durable workflow runs under failure', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let workflowId: string;
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/step': keyAfter(300) });
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'http');
    const agent = await registerAgent(t, org, {
      kind: 'http.agent',
      config: { url: `${remote.url}/step` },
      timeoutMs: 5000,
      maxAttempts: 1,
    });
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({
        name: 'five steps',
        steps: [
          { id: 'fetch', agent },
          { id: 'left', agent, needs: ['fetch'], input: '{ "from": steps.fetch.output.key }' },
          { id: 'right', agent, needs: ['fetch'], input: '{ "from": steps.fetch.output.key }' },
          { id: 'merge', agent, needs: ['left', 'right'], input: '[steps.left.output.key, steps.right.output.key]' },
          { id: 'report', agent, needs: ['merge'] },
        ],
      });
    expect(res.status).toBe(201);
    workflowId = res.body.id;
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    await t.close();
    await remote.close();
  });

  const enqueue = async (count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, () =>
          t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} }),
        ),
      );
      for (const res of batch) expect(res.status).toBe(202);
      ids.push(...batch.map((r) => r.body.id as string));
    }
    return ids;
  };

  const untilFinished = async (ids: string[], timeoutMs: number): Promise<RunRow[]> => {
    const dataSource = t.app.get(DataSource);
    let unfinished = ids.length;
    return eventually(
      async () => {
        const rows = await dataSource.query<RunRow[]>(
          `SELECT r.id, r.status,
             (SELECT json_agg(json_build_object('step_id', s.step_id, 'status', s.status, 'output', s.output, 'finished_at', s.finished_at))
              FROM workflow_run_steps s WHERE s.run_id = r.id) AS steps
           FROM workflow_runs r WHERE r.id = ANY($1::uuid[])`,
          [ids],
        );
        unfinished = rows.filter((r) => ['queued', 'running'].includes(r.status)).length;
        return unfinished === 0 && rows;
      },
      { timeoutMs, intervalMs: 250, message: () => `${ids.length} runs to finish (${unfinished} still queued or running)` },
    );
  };

  /** Every run succeeded with every step's result, and no step was called again once its result was committed. */
  const expectCompleteAndNeverRepeatedAfterCommit = (rows: RunRow[], ids: string[]) => {
    expect(rows).toHaveLength(ids.length);
    for (const run of rows) {
      expect(run.status).toBe('succeeded');
      expect(run.steps.map((s) => s.step_id).sort()).toEqual([...STEP_IDS].sort());
      for (const step of run.steps) {
        const key = `${run.id}:${step.step_id}`;
        expect(step).toMatchObject({ status: 'succeeded', output: { key } });
        const committed = new Date(step.finished_at).getTime();
        for (const { at: calledAt } of remote.calls.get(key) ?? []) expect(calledAt).toBeLessThanOrEqual(committed + 1);
      }
    }
  };

  it('finishes 100 runs while workers are killed with SIGKILL mid-step; committed steps are never called again', async () => {
    workers.push(await startService(WORKER_ENV), await startService(WORKER_ENV));
    const ids: string[] = [];
    for (let kill = 0; kill < 4; kill++) {
      ids.push(...(await enqueue(25)));
      await remote.callsInFlight();
      const victim = workers.splice(kill % workers.length, 1)[0];
      await victim.kill('SIGKILL');
      workers.push(await startService(WORKER_ENV));
    }
    const rows = await untilFinished(ids, 180_000);
    expectCompleteAndNeverRepeatedAfterCommit(rows, ids);
    const repeated = [...remote.calls.values()].filter((calls) => calls.length > 1).length;
    // Steps in flight at a kill ran again, under their same key.
    expect(repeated).toBeGreaterThan(0);
    for (const worker of workers) expect(worker.alive()).toBe(true);
  });

  it('finishes every run across a Postgres outage mid-run', async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    const proxy = await startTcpProxy(process.env.DATABASE_URL!);
    try {
      const env = { ...WORKER_ENV, DATABASE_URL: proxy.url };
      workers.push(await startService(env), await startService(env));
      const ids = await enqueue(30);
      await remote.callsInFlight();
      proxy.cut();
      await new Promise((r) => setTimeout(r, 3000));
      proxy.restore();
      const rows = await untilFinished(ids, 180_000);
      expectCompleteAndNeverRepeatedAfterCommit(rows, ids);
      for (const worker of workers) expect(worker.alive()).toBe(true);
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.kill()));
      await proxy.close();
    }
  });
});
