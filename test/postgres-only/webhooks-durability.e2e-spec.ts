import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo, createServer as createTcpServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Webhook deliveries when things go wrong: an API-only app (this test) and real worker
 * processes (APP_ROLE=worker) on one Postgres, a receiver on a loopback port that is down,
 * then failing, then up; and a worker killed with SIGKILL while executions finish and their
 * messages go out. Nothing is lost, and a message delivered twice carries the same webhook-id.
 *
 * The retry schedule is about 5 s (±20 %) after the first attempt, then about 5 minutes: the
 * receiver's bad spell is kept short enough that every message fails at most once.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' };
const EXECUTIONS = 300;
/** After the first (refused) attempt: the receiver listens, answering 503, then 200. */
const LISTEN_AFTER_MS = 1500;
const HEALTHY_AFTER_MS = 3500;
/** The earliest retry: 5 s less 20 % jitter. The receiver must be healthy by then. */
const EARLIEST_RETRY_MS = 4000;

jest.setTimeout(180_000);

/** A delivery as the receiver got it, and what it answered. */
interface Delivery {
  webhookId: string;
  executionId: string;
  body: string;
  headers: IncomingHttpHeaders;
  answered: number;
}

/** A webhook receiver on a fixed loopback port, which may not listen yet. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  private server?: Server;

  constructor(
    readonly port: number,
    /** The status to answer a delivery arriving now. */
    private readonly answer: () => number = () => 200,
    /** How long each answer takes (deliveries stay in flight this long). */
    private readonly delayMs = 0,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const answered = this.answer();
        this.deliveries.push({
          webhookId: String(req.headers['webhook-id']),
          executionId: (JSON.parse(body) as { data: { id: string } }).data.id,
          body,
          headers: req.headers,
          answered,
        });
        setTimeout(() => res.writeHead(answered).end(), this.delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  /** The deliveries it answered 2xx. */
  accepted(): Delivery[] {
    return this.deliveries.filter((d) => d.answered >= 200 && d.answered < 300);
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

/** A loopback port nobody listens on now (a connection to it is refused). */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe('webhook deliveries under failure', () => {
  let t: TestApp;
  let db: DataSource;
  const workers: ServiceProcess[] = [];
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    // 300 executions a test are more than a team organization's requests a minute.
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', RATE_LIMIT_ENABLED: 'false' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await t.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  /** A team organization with a transform.jsonata agent and an endpoint for its executions at `url`. */
  async function setUp(url: string): Promise<{ org: TestOrg; agentId: string; endpointId: string; secret: string }> {
    const org = await t.newOrg('team');
    await install(t, org, 'transform');
    // A short timeout keeps the lease short: an execution a killed worker held runs again within seconds.
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' }, timeoutMs: 1000 });
    const res = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url, eventTypes: ['agent.execution.*'] });
    expect(res.status).toBe(201);
    return { org, agentId, endpointId: res.body.id as string, secret: res.body.secret as string };
  }

  async function enqueue(org: TestOrg, agentId: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, count - i) }, (_, j) =>
          t
            .http()
            .post(`/api/agents/${agentId}/execute?wait=0`)
            .set(bearer(org.member))
            .send({ input: { text: `n${i + j}` } }),
        ),
      );
      for (const res of batch) expect(res.status).toBe(202);
      ids.push(...batch.map((r) => r.body.id as string));
    }
    return ids;
  }

  const executionStatuses = (ids: string[]) =>
    db.query<Array<{ id: string; status: string }>>('SELECT id, status FROM agent_executions WHERE id = ANY($1::uuid[])', [ids]);

  async function untilExecutionsFinished(ids: string[], timeoutMs: number): Promise<Array<{ id: string; status: string }>> {
    let unfinished = ids.length;
    return eventually(
      async () => {
        const rows = await executionStatuses(ids);
        unfinished = rows.filter((r) => r.status === 'queued' || r.status === 'running').length;
        return unfinished === 0 && rows;
      },
      { timeoutMs, intervalMs: 200, message: () => `${ids.length} executions to finish (${unfinished} still queued or running)` },
    );
  }

  interface MessageRow {
    id: string;
    status: string;
    attempts: number;
    executionId: string;
  }

  const messagesOf = (endpointId: string) =>
    db.query<MessageRow[]>(
      `SELECT id, status, attempts, (payload::jsonb)->'data'->>'id' AS "executionId" FROM webhook_messages WHERE endpoint_id = $1`,
      [endpointId],
    );

  /** Waits until the endpoint has `count` messages, none pending, and the receiver accepted each; answers the messages. */
  async function untilDelivered(receiver: Receiver, endpointId: string, count: number, timeoutMs: number): Promise<MessageRow[]> {
    let state = '';
    return eventually(
      async () => {
        const messages = await messagesOf(endpointId);
        const pending = messages.filter((m) => m.status === 'queued' || m.status === 'running').length;
        const accepted = new Set(receiver.accepted().map((d) => d.webhookId)).size;
        state = `${messages.length} messages, ${pending} pending, ${accepted} accepted by the receiver`;
        return messages.length === count && pending === 0 && accepted >= count && messages;
      },
      { timeoutMs, intervalMs: 250, message: () => `${count} messages to be delivered (${state})` },
    );
  }

  /**
   * What every test asserts at the end: one message per execution, each delivered, the
   * receiver's webhook-ids are exactly the messages' ids, and every delivery of an execution
   * (a repeat after a failure or a crash) carries its message's one id, signed.
   */
  function expectExactlyOneIdPerExecution(receiver: Receiver, messages: MessageRow[], executionIds: string[], secret: string): void {
    expect(messages.map((m) => m.status)).toEqual(messages.map(() => 'succeeded'));
    const messageOf = new Map(messages.map((m) => [m.executionId, m.id]));
    expect(messageOf.size).toBe(messages.length);
    expect([...messageOf.keys()].sort()).toEqual([...executionIds].sort());

    expect([...new Set(receiver.deliveries.map((d) => d.webhookId))].sort()).toEqual(messages.map((m) => m.id).sort());
    expect([...new Set(receiver.accepted().map((d) => d.executionId))].sort()).toEqual([...executionIds].sort());
    const webhook = new Webhook(secret);
    for (const delivery of receiver.deliveries) {
      expect(delivery.webhookId).toBe(messageOf.get(delivery.executionId));
      expect(() => webhook.verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
    }
  }

  it('delivers every message once a receiver that refused connections, then answered 503, is back', async () => {
    workers.push(await startService(WORKER_ENV));
    let healthyAt = Infinity;
    const receiver = new Receiver(await freePort(), () => (Date.now() < healthyAt ? 503 : 200));
    receivers.push(receiver);
    const { org, agentId, endpointId, secret } = await setUp(receiver.url);

    const enqueued = enqueue(org, agentId, EXECUTIONS);
    enqueued.catch(() => undefined);
    // The first attempt, refused: the receiver's bad spell is timed from it, while executions
    // are still being enqueued and finishing.
    const first = await eventually(
      async () => {
        const [row] = await db.query<Array<{ first: Date | null }>>(
          `SELECT min(a.attempted_at) AS first FROM webhook_attempts a JOIN webhook_messages m ON m.id = a.message_id WHERE m.endpoint_id = $1`,
          [endpointId],
        );
        return row.first?.getTime();
      },
      { timeoutMs: 30_000, intervalMs: 20, message: 'the first delivery attempt' },
    );
    healthyAt = first + HEALTHY_AFTER_MS;
    expect(healthyAt).toBeLessThan(first + EARLIEST_RETRY_MS);
    await sleep(first + LISTEN_AFTER_MS - Date.now());
    await receiver.listen();
    // Listening before any refused message is tried again.
    expect(Date.now()).toBeLessThan(first + EARLIEST_RETRY_MS);
    const ids = await enqueued;

    const executions = await untilExecutionsFinished(ids, 60_000);
    expect(executions.map((e) => e.status)).toEqual(ids.map(() => 'succeeded'));
    const messages = await untilDelivered(receiver, endpointId, EXECUTIONS, 60_000);
    expectExactlyOneIdPerExecution(receiver, messages, ids, secret);

    // The receiver really was down for some: those attempts were refused, and each message
    // failed at most once (a second failure would wait ~5 minutes).
    const [{ refused }] = await db.query<Array<{ refused: number }>>(
      `SELECT count(*)::int AS refused FROM webhook_attempts a JOIN webhook_messages m ON m.id = a.message_id
       WHERE m.endpoint_id = $1 AND a.status_code IS NULL`,
      [endpointId],
    );
    expect(refused).toBeGreaterThan(0);
    expect(Math.max(...messages.map((m) => m.attempts))).toBeLessThanOrEqual(2);
    const unavailable = receiver.deliveries.filter((d) => d.answered === 503).length;
    process.stderr.write(
      `receiver down, then up: ${refused} attempts refused, ${unavailable} answered 503, ` +
        `${receiver.deliveries.length} deliveries of ${EXECUTIONS} messages\n`,
    );
  });

  it('loses no message when the worker is killed with SIGKILL while executions finish and deliveries are in flight', async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    const victim = await startService(WORKER_ENV);
    workers.push(victim);
    // Slow answers keep deliveries in flight, and a backlog of messages, when the worker dies.
    const receiver = new Receiver(await freePort(), () => 200, 50);
    receivers.push(receiver);
    await receiver.listen();
    const { org, agentId, endpointId, secret } = await setUp(receiver.url);

    const enqueued = enqueue(org, agentId, EXECUTIONS);
    enqueued.catch(() => undefined);
    const succeededOfAgent = async () =>
      (
        await db.query<Array<{ id: string }>>(`SELECT id FROM agent_executions WHERE agent_id = $1 AND status = 'succeeded'`, [agentId])
      ).map((r) => r.id);
    let succeeded = 0;
    await eventually(
      async () => {
        succeeded = (await succeededOfAgent()).length;
        return succeeded >= EXECUTIONS / 3;
      },
      { timeoutMs: 60_000, intervalMs: 20, message: () => `a third of the executions to succeed (${succeeded})` },
    );
    await victim.kill('SIGKILL');
    const finishedAtKill = await succeededOfAgent();
    const deliveredAtKill = receiver.deliveries.length;
    // Killed during the fan-out: executions still to finish, messages still to deliver.
    expect(finishedAtKill.length).toBeLessThan(EXECUTIONS);
    expect(deliveredAtKill).toBeLessThan(EXECUTIONS);
    workers.splice(workers.indexOf(victim), 1);
    workers.push(await startService(WORKER_ENV));
    const ids = await enqueued;

    const executions = await untilExecutionsFinished(ids, 90_000);
    expect(executions.map((e) => e.status)).toEqual(ids.map(() => 'succeeded'));
    const messages = await untilDelivered(receiver, endpointId, EXECUTIONS, 90_000);
    // Every execution finished before the kill has its message, and so has every other.
    const withMessage = new Set(messages.map((m) => m.executionId));
    expect(finishedAtKill.filter((id) => !withMessage.has(id))).toEqual([]);
    expectExactlyOneIdPerExecution(receiver, messages, ids, secret);
    for (const worker of workers) expect(worker.alive()).toBe(true);

    const repeats = receiver.deliveries.length - new Set(receiver.deliveries.map((d) => d.webhookId)).size;
    process.stderr.write(
      `SIGKILL during fan-out: killed after ${finishedAtKill.length} executions had finished and ${deliveredAtKill} deliveries ` +
        `had arrived; ${receiver.deliveries.length} deliveries of ${EXECUTIONS} messages (${repeats} repeated)\n`,
    );
  });
});
