import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { ExpressionSandbox } from '../../src/shared/expressions/expression-sandbox';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, keyAfter, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { Receiver } from '../support/webhook-receiver';
import { quiesce } from '../support/quiesce';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Two organizations on one instance (API and worker in one process, as `npm start` runs it):
 * organization A floods each shared resource in turn (slow hook mappings in the expression
 * sandbox, 2,000 queued executions of a remote agent that takes 2 s, webhook endpoints whose
 * receiver never answers in time, hundreds of schedules due at the same minute), and
 * organization B's single hook, execution, delivery and schedule still complete within 2 s of
 * what they take alone.
 */
jest.setTimeout(300_000);

/** How much longer B's work may take while A floods than alone. */
const SLACK_MS = 2000;
/** What the issue measured: each evaluation runs its thread out of memory (and the thread is replaced). */
const SLOW_MAPPING = '$count($sort([1..100000]))';
const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

describe('fair shares: one organization cannot hold the work of another', () => {
  let t: TestApp;
  let a: TestOrg;
  let b: TestOrg;
  let db: DataSource;
  let remote: FakeRemoteAgent;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({ '/slow': keyAfter(2000) });
    t = await createTestApp({ env: { APP_ROLE: 'all', RATE_LIMIT_ENABLED: 'false', OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [a, b] = [await t.newOrg('team'), await t.newOrg('team')];
    for (const org of [a, b]) await install(t, org, 'transform');
    await install(t, a, 'http');
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    try {
      // A's floods (every-minute schedules, queued executions, slow endpoints) end with this file.
      await quiesce(db, [a.id, b.id]);
    } finally {
      await t.close();
      await remote.close();
    }
  });

  const define = async (org: TestOrg, definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const echoWorkflow = (org: TestOrg) => define(org, { name: 'echo', steps: [{ id: 'echo', ...jsonata('$') }] });
  const timed = async <T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> => {
    const began = performance.now();
    const result = await work();
    return { result, ms: performance.now() - began };
  };
  /** Runs `flood` until `measure` is done, and answers the measure. */
  const whileFlooding = async <T>(flood: (stop: AbortSignal) => Promise<unknown>, measure: () => Promise<T>): Promise<T> => {
    const stop = new AbortController();
    const flooding = flood(stop.signal);
    try {
      return await measure();
    } finally {
      stop.abort();
      await flooding;
    }
  };

  it("answers B's hook as fast while A's hooks run slow mappings on every thread they may have", async () => {
    const trigger = async (org: TestOrg, mapping: string) => {
      const workflowId = await echoWorkflow(org);
      const res = await t.http().post(`/api/workflows/${workflowId}/triggers`).set(bearer(org.admin)).send({ scheme: 'bearer', mapping });
      expect(res.status).toBe(201);
      return res.body as { id: string; secret: string };
    };
    const [slow, quick] = [await trigger(a, SLOW_MAPPING), await trigger(b, '{ "n": body.n }')];
    const send = (target: { id: string; secret: string }, n: number) =>
      t.http().post(`/api/hooks/${target.id}`).set('Authorization', `Bearer ${target.secret}`).send({ n });
    const measureB = async () => {
      const { result, ms } = await timed(() => send(quick, 1));
      expect(result.status).toBe(202);
      return ms;
    };

    await measureB();
    const alone = await measureB();
    const sandbox = t.app.get(ExpressionSandbox);
    let aAnswered = 0;
    const underFlood = await whileFlooding(
      async (stop) => {
        // 30 of A's requests in flight at all times.
        await Promise.all(
          Array.from({ length: 30 }, async () => {
            while (!stop.aborted) {
              // The mapping fails (its thread runs out of memory): 400, recorded as refused.
              expect((await send(slow, 1)).status).toBe(400);
              aAnswered++;
            }
          }),
        );
      },
      async () => {
        // The flood is established once one of A's mappings has run its thread out of memory and
        // been answered (the others wait their turn behind it, a second or so each), and the next
        // holds a thread of the sandbox: B asks while A's work occupies what A may have.
        await eventually(() => aAnswered >= 1 && sandbox.evaluating > 0, {
          timeoutMs: 60_000,
          intervalMs: 20,
          message: () => `A's flood to be established (${aAnswered} answers, ${sandbox.evaluating} evaluating)`,
        });
        return measureB();
      },
    );
    expect(aAnswered).toBeGreaterThan(0);
    expect(underFlood).toBeLessThanOrEqual(alone + SLACK_MS);
  });

  it("runs B's single execution while 2,000 of A's wait in the queue", async () => {
    const aAgent = await registerAgent(t, a, { kind: 'http.agent', config: { url: `${remote.url}/slow` }, timeoutMs: 10_000 });
    const bAgent = await registerAgent(t, b, { kind: 'transform.jsonata', config: { expression: '$' }, timeoutMs: 10_000 });
    const executeB = async () => {
      const { result, ms } = await timed(() =>
        t.http().post(`/api/agents/${bAgent}/execute?wait=30`).set(bearer(b.member)).send({ input: 1 }),
      );
      expect(result.status).toBe(200);
      expect(result.body.status).toBe('succeeded');
      return ms;
    };

    await executeB();
    const alone = await executeB();
    // A's 2,000, queued 100 at a time (?wait=0 answers 202 at once).
    for (let i = 0; i < 2000; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, () => t.http().post(`/api/agents/${aAgent}/execute?wait=0`).set(bearer(a.member)).send({ input: 1 })),
      );
      for (const res of batch) expect(res.status).toBe(202);
    }
    const underFlood = await executeB();
    const [{ waiting }] = await db.query<Array<{ waiting: string }>>(
      `SELECT count(*) AS waiting FROM agent_executions WHERE organization_id = $1 AND status IN ('queued', 'running')`,
      [a.id],
    );
    // A's flood was still there when B's execution finished.
    expect(Number(waiting)).toBeGreaterThan(1000);
    expect(underFlood).toBeLessThanOrEqual(alone + SLACK_MS);
    // A's are not lost, only waiting their turn: cancel what is left so the next flood starts clean.
    await db.query(
      `UPDATE agent_executions SET status = 'canceled', finished_at = now() WHERE organization_id = $1 AND status = 'queued'`,
      [a.id],
    );
  });

  it("delivers B's webhook while A's endpoints answer too late, every one of them", async () => {
    const receiver = new Receiver();
    await receiver.start();
    const hanging = await hangingServer();
    try {
      const endpoint = async (org: TestOrg, url: string) => {
        const res = await t
          .http()
          .post('/api/webhooks')
          .set(bearer(org.admin))
          .send({ url, eventTypes: ['workflow.run.*'] });
        expect(res.status).toBe(201);
      };
      for (let i = 0; i < 18; i++) await endpoint(a, `${hanging.url}/a${i}`);
      await endpoint(b, receiver.url('/b'));
      const [aWorkflow, bWorkflow] = [await echoWorkflow(a), await echoWorkflow(b)];
      const run = (org: TestOrg, workflowId: string) =>
        t
          .http()
          .post(`/api/workflows/${workflowId}/run?wait=30`)
          .set(bearer(org.member))
          .send({ input: { n: 1 } });
      const deliverB = async () => {
        const before = receiver.on('/b').length;
        const { result } = await timed(() => run(b, bWorkflow));
        expect(result.body.status).toBe('succeeded');
        const finishedAt = Date.parse(result.body.finishedAt as string);
        // Its workflow.run.succeeded reaches B's receiver.
        const got = await eventually(() => (receiver.on('/b').length > before ? receiver.on('/b').slice(before) : undefined), {
          timeoutMs: 60_000,
          message: () => "B's deliveries",
        });
        return Math.max(...got.map((r) => r.at)) - finishedAt;
      };

      await deliverB();
      const alone = await deliverB();
      // A's runs raise events for 18 endpoints each: hundreds of deliveries that each take the full timeout.
      for (let i = 0; i < 20; i++) expect((await run(a, aWorkflow)).status).toBe(200);
      await eventually(() => (hanging.requests() >= 18 ? true : undefined), {
        timeoutMs: 20_000,
        message: () => "A's deliveries to start",
      });
      const underFlood = await deliverB();
      expect(underFlood).toBeLessThanOrEqual(alone + SLACK_MS);
    } finally {
      await receiver.close();
      await hanging.close();
    }
  });

  it("fires B's schedule on time while hundreds of A's are due at the same minute", async () => {
    const bWorkflow = await echoWorkflow(b);
    // A workflow has at most 20 schedules: A's 300 are spread over 15.
    const aWorkflows = await Promise.all(Array.from({ length: 15 }, () => echoWorkflow(a)));
    const schedule = async (org: TestOrg, workflowId: string) => {
      const res = await t
        .http()
        .post(`/api/workflows/${workflowId}/schedules`)
        .set(bearer(org.admin))
        .send({ cron: '* * * * *', timezone: 'UTC', input: { n: 1 } });
      expect(res.status).toBe(201);
    };
    /** B's run for the minute `at`: from `since` to its end, in ms (alone, the tick of a second and the run). */
    const bRunOf = (at: Date, since: number) =>
      eventually(
        async () => {
          const [row] = await db.query<Array<{ finished_at: Date }>>(
            `SELECT finished_at FROM workflow_runs WHERE organization_id = $1 AND triggered_by->>'scheduledFor' = $2 AND finished_at IS NOT NULL`,
            [b.id, at.toISOString()],
          );
          return row ? row.finished_at.getTime() - since : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 200, message: () => `B's run of ${at.toISOString()}` },
      );

    for (const workflowId of aWorkflows) await Promise.all(Array.from({ length: 20 }, () => schedule(a, workflowId)));
    await schedule(b, bWorkflow);
    // Rather than wait for the next minute: every schedule of both made due at once, at this
    // minute's occurrence (less than a minute ago: on time). Not in a minute's last 15 s, so
    // that the next natural one comes well after.
    if (Date.now() % 60_000 > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - (Date.now() % 60_000)));
    const madeDueAt = Date.now();
    const due = await db.query<Array<{ minute: Date }>>(
      `WITH moved AS (
         UPDATE workflow_schedules SET next_fire_at = date_trunc('minute', now()) WHERE organization_id = ANY($1) RETURNING next_fire_at
       ) SELECT DISTINCT next_fire_at AS minute FROM moved`,
      [[a.id, b.id]],
    );
    expect(due).toHaveLength(1);
    const minute = new Date(due[0].minute);
    // Alone, B's schedule fires within the scheduler's tick (a second) and its run takes a few ms.
    const underFlood = await bRunOf(minute, madeDueAt);
    expect(underFlood).toBeLessThanOrEqual(1000 + SLACK_MS);
    // And A's all fired at that minute.
    await eventually(
      async () => {
        const [{ count }] = await db.query<Array<{ count: string }>>(
          `SELECT count(*) FROM workflow_runs WHERE organization_id = $1 AND triggered_by->>'scheduledFor' = $2`,
          [a.id, minute.toISOString()],
        );
        return Number(count) === 300 ? true : undefined;
      },
      { timeoutMs: 60_000, message: () => "A's 300 runs of the minute" },
    );
  });
});

/** A receiver that never answers (the sender times out); counts the requests it got. */
async function hangingServer(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server: Server = createServer(() => {
    requests++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
