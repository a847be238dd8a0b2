/**
 * Webhook delivery benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL
 * database per run, with one endpoint (`agent.execution.*`) on a loopback receiver in this
 * process. Every run enqueues N transform.jsonata executions (?wait=0) on an APP_ROLE=api
 * process, then starts one APP_ROLE=worker process that drains them at full speed, finishing
 * executions and delivering their messages side by side.
 *
 *   1. execution cost: runs with webhooks off (no endpoint) and on, interleaved (off, on, on, off,
 *      ...); executions/s is measured from the rows (succeeded / (last finish − first start)),
 *      and the better run of each configuration is compared;
 *   2. steady deliveries (the "on" runs): deliveries/s = receipts / (last receipt − first receipt),
 *      and the lag from an execution's finishedAt (the body's data.finishedAt) to the receipt;
 *   3. outage: the receiver answers 503 for BENCH_OUTAGE_SECONDS once half the messages arrived,
 *      then 200 again; the time from its recovery to the last message delivered. Failed
 *      attempts wait for the retry schedule (about 5 s, then about 5 minutes), which sets it.
 *
 * The license is a throwaway one (team tier, signed by a throwaway vendor key): webhooks need
 * the team tier, and the bootstrap organization is created at the licensed tier.
 *
 * Run with `npm run bench:webhooks`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per run is created on it and dropped at the end
 *   BENCH_WEBHOOK_EXECUTIONS         executions enqueued per run (5000)
 *   BENCH_WEBHOOK_RUNS               runs of each configuration, off and on (2)
 *   BENCH_ENQUEUE_CLIENTS            concurrent enqueue clients (50)
 *   BENCH_OUTAGE_SECONDS             how long the receiver answers 503 in the outage run (10)
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for executions and steady deliveries to finish (600)
 *   BENCH_OUTAGE_TIMEOUT_SECONDS     longest wait for the outage run's deliveries to finish (900)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE passed through to the service processes
 */
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import {
  brief,
  field,
  fixed,
  formatRows,
  intFromEnv,
  log,
  loginAndInstallTransform,
  machineLine,
  randomCredentials,
  reportErrors,
  Row,
  runLoad,
  ScratchDatabases,
  serviceEnv,
  Services,
  summarize,
  unexpected,
  verdict,
  waitForDrain,
  cleanupOnce,
  drainFigures,
  runBenchmark,
  throwawayLicense,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  executions: intFromEnv('BENCH_WEBHOOK_EXECUTIONS', 5000),
  runs: intFromEnv('BENCH_WEBHOOK_RUNS', 2),
  enqueueClients: intFromEnv('BENCH_ENQUEUE_CLIENTS', 50),
  outageMs: intFromEnv('BENCH_OUTAGE_SECONDS', 10) * 1000,
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 600) * 1000,
  outageTimeoutMs: intFromEnv('BENCH_OUTAGE_TIMEOUT_SECONDS', 900) * 1000,
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

const TARGETS = { deliveriesPerSecond: 1000, lagP50Ms: 20, executionCost: 0.15 };

/** Shared by every process of the run: tokens and encrypted secrets must be valid across them. */
const credentials = randomCredentials();

const AGENT = { name: 'bench', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };
const INPUT = { input: { text: 'hello' } };

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_${Date.now()}`);

// ---------------------------------------------------------------------------------------------
// The receiver

interface Receipt {
  webhookId: string;
  /** Arrival (ms since epoch), when the body was read. */
  at: number;
  /** The execution's data.finishedAt (ms since epoch). */
  finishedAt: number;
  status: number;
}

/** A webhook receiver on loopback: records every delivery and answers what `answer` says at that moment. */
class Receiver {
  readonly receipts: Receipt[] = [];
  /** The ids answered 2xx. */
  readonly accepted = new Set<string>();
  answer: () => number = () => 200;
  private server?: Server;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = Date.now();
        const status = this.answer();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { finishedAt: string } };
        const webhookId = String(req.headers['webhook-id']);
        this.receipts.push({ webhookId, at, finishedAt: Date.parse(body.data.finishedAt), status });
        if (status >= 200 && status < 300) this.accepted.add(webhookId);
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    this.port = (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server!.close(() => done()));
  }
}

// ---------------------------------------------------------------------------------------------
// A run

interface Prepared {
  agentId: string;
  databaseUrl: string;
  /** A connection to the run's database, for the figures. */
  db: Client;
  endpointId?: string;
}

/** A scratch database, its APP_ROLE=api process, the agent and (with a receiver) the endpoint; then N executions queued. */
async function prepare(name: string, license: Record<string, string>, receiver?: Receiver): Promise<Prepared> {
  const databaseUrl = await databases.create(name);
  log(`${name}: starting one APP_ROLE=api process`);
  const api = await services.start('api', { ...processEnv(databaseUrl, 'api'), ...license }, settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(api, credentials);
  const agent = await client.request('POST', '/api/agents', AGENT);
  const agentId = field(agent.body, 'id');
  if (agent.status !== 201 || typeof agentId !== 'string') throw unexpected('agent creation', agent.status, agent.body);
  let endpointId: string | undefined;
  if (receiver) {
    const res = await client.request('POST', '/api/webhooks', { url: receiver.url, eventTypes: ['agent.execution.*'] });
    endpointId = field(res.body, 'id') as string | undefined;
    if (res.status !== 201 || typeof endpointId !== 'string') throw unexpected('endpoint creation', res.status, res.body);
  }
  log(`${name}: enqueueing ${settings.executions} executions, ${settings.enqueueClients} clients`);
  const queued = await runLoad(
    settings.enqueueClients,
    settings.executions,
    async () => {
      const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=0`, INPUT);
      return res.status === 202 ? null : `HTTP ${res.status} ${brief(res.body)}`;
    },
    interrupted.signal,
  );
  reportErrors(`${name}: enqueue`, queued);
  if (queued.errors) throw new Error(`${name}: ${queued.errors} enqueue(s) failed`);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  return { agentId, databaseUrl, db, endpointId };
}

function processEnv(databaseUrl: string, role: 'api' | 'worker'): Record<string, string> {
  return { ...serviceEnv(credentials, databaseUrl, role), OUTBOUND_ALLOWLIST: '127.0.0.1' };
}

const alive = () => {
  services.assertAlive();
  if (interrupted.signal.aborted) throw new Error('interrupted');
};

/** Polls every 200 ms until the endpoint's messages are all final and `done` holds; throws past `timeoutMs`. */
async function waitForDeliveries(db: Client, endpointId: string, timeoutMs: number, done: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ total: number; pending: number }>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS pending
         FROM webhook_messages WHERE endpoint_id = $1`,
      [endpointId],
    );
    if (rows[0].total >= settings.executions && rows[0].pending === 0 && done()) return;
    alive();
    if (Date.now() > deadline) throw new Error(`after ${timeoutMs / 1000} s ${rows[0].pending} of ${rows[0].total} messages still pending`);
    await sleep(200);
  }
}

/** Where a delivery's time goes, from the rows: message created → first attempt, and the HTTP exchange. */
async function deliveryBreakdown(
  db: Client,
  endpointId: string,
): Promise<{ queuedP50: number; queuedP99: number; httpP50: number; httpP99: number }> {
  const { rows } = await db.query<{ queuedP50: number; queuedP99: number; httpP50: number; httpP99: number }>(
    `WITH firsts AS (
       SELECT DISTINCT ON (a.message_id) extract(epoch FROM a.attempted_at - m.created_at) * 1000 AS queued, a.latency_ms
         FROM webhook_attempts a JOIN webhook_messages m ON m.id = a.message_id
        WHERE m.endpoint_id = $1 ORDER BY a.message_id, a.attempted_at)
     SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY queued)::float8 AS "queuedP50",
            percentile_disc(0.99) WITHIN GROUP (ORDER BY queued)::float8 AS "queuedP99",
            percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms)::float8 AS "httpP50",
            percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms)::float8 AS "httpP99"
       FROM firsts`,
    [endpointId],
  );
  return rows[0];
}

/** Lag finishedAt → receipt of each message's first accepted delivery. */
function lags(receipts: Receipt[]): number[] {
  const first = new Map<string, number>();
  for (const r of receipts) if (r.status < 300 && !first.has(r.webhookId)) first.set(r.webhookId, r.at - r.finishedAt);
  return [...first.values()];
}

/** Receipts per second between the first and the last. */
function deliveryRate(receipts: Receipt[]): { throughput: number; wallSeconds: number } {
  if (receipts.length < 2) return { throughput: NaN, wallSeconds: 0 };
  const seconds = (receipts[receipts.length - 1].at - receipts[0].at) / 1000;
  return { throughput: receipts.length / seconds, wallSeconds: seconds };
}

interface CostRun {
  webhooks: boolean;
  executions: Row;
  deliveries?: Row;
  breakdown?: Awaited<ReturnType<typeof deliveryBreakdown>>;
}

/** One run with webhooks on (an endpoint on a receiver answering 200) or off (no endpoint). */
async function costRun(webhooks: boolean, run: number, license: Record<string, string>): Promise<CostRun> {
  const name = `${webhooks ? 'on' : 'off'}_${run}`;
  const receiver = webhooks ? new Receiver() : undefined;
  await receiver?.start();
  const prepared = await prepare(name, license, receiver);
  const { db, agentId, endpointId, databaseUrl } = prepared;
  try {
    log(`${name}: starting one APP_ROLE=worker process`);
    const spawnedAt = performance.now();
    await services.start('worker', { ...processEnv(databaseUrl, 'worker'), ...license }, settings.readyTimeoutMs);
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: agentId }, settings.asyncTimeoutMs, alive);
    const drainedAt = performance.now();
    if (receiver && endpointId) {
      await waitForDeliveries(db, endpointId, settings.asyncTimeoutMs, () => receiver.accepted.size >= settings.executions);
    }
    const figures = await drainFigures(db, agentId);
    alive();
    const result: CostRun = {
      webhooks,
      executions: {
        scenario: `executions, webhooks ${webhooks ? 'on ' : 'off'} (run ${run})`,
        count: figures.succeeded,
        errors: figures.total - figures.succeeded,
        p50: figures.p50,
        p99: figures.p99,
        mean: figures.mean,
        throughput: figures.throughput,
        wallSeconds: (drainedAt - spawnedAt) / 1000,
      },
    };
    if (receiver && endpointId) {
      const lag = summarize(lags(receiver.receipts));
      result.deliveries = {
        scenario: `deliveries, receiver up (run ${run})`,
        count: receiver.receipts.length,
        errors: settings.executions - receiver.accepted.size,
        ...lag,
        ...deliveryRate(receiver.receipts),
      };
      result.breakdown = await deliveryBreakdown(db, endpointId);
    }
    return result;
  } finally {
    await db.end();
    await services.stopAll();
    await receiver?.close();
  }
}

interface OutageRun {
  deliveries: Row;
  /** Recovery → the last message delivered, s. */
  drainSeconds: number;
  /** Recovery → the last message that failed only once delivered, s. */
  onceFailedSeconds: number;
  unavailable: number;
  byAttempts: Record<number, number>;
}

/** The receiver answers 503 for BENCH_OUTAGE_SECONDS once half the messages arrived, then 200. */
async function outageRun(license: Record<string, string>): Promise<OutageRun> {
  const receiver = new Receiver();
  let outageFrom = Infinity;
  receiver.answer = () => {
    const now = Date.now();
    if (outageFrom === Infinity && receiver.accepted.size >= settings.executions / 2) {
      outageFrom = now;
      log(`outage: the receiver answers 503 for ${settings.outageMs / 1000} s`);
    }
    return now >= outageFrom && now < outageFrom + settings.outageMs ? 503 : 200;
  };
  await receiver.start();
  const prepared = await prepare('outage', license, receiver);
  const { db, agentId, endpointId, databaseUrl } = prepared;
  try {
    log('outage: starting one APP_ROLE=worker process');
    await services.start('worker', { ...processEnv(databaseUrl, 'worker'), ...license }, settings.readyTimeoutMs);
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: agentId }, settings.asyncTimeoutMs, alive);
    log('outage: waiting for every message to be delivered (failed attempts wait for the retry schedule)');
    await waitForDeliveries(db, endpointId!, settings.outageTimeoutMs, () => receiver.accepted.size >= settings.executions);
    alive();
    const recoveredAt = outageFrom + settings.outageMs;
    const { rows } = await db.query<{ id: string; attempts: number }>(`SELECT id, attempts FROM webhook_messages WHERE endpoint_id = $1`, [
      endpointId,
    ]);
    const byAttempts: Record<number, number> = {};
    for (const r of rows) byAttempts[r.attempts] = (byAttempts[r.attempts] ?? 0) + 1;
    const onceFailed = new Set(rows.filter((r) => r.attempts === 2).map((r) => r.id));
    const accepted = receiver.receipts.filter((r) => r.status < 300);
    const lastAt = (of: Receipt[]) => Math.max(...of.map((r) => r.at));
    const deliveries: Row = {
      scenario: `deliveries, ${settings.outageMs / 1000} s of 503`,
      count: receiver.receipts.length,
      errors: settings.executions - receiver.accepted.size,
      ...summarize(lags(receiver.receipts)),
      ...deliveryRate(receiver.receipts),
    };
    return {
      deliveries,
      drainSeconds: (lastAt(accepted) - recoveredAt) / 1000,
      onceFailedSeconds: (lastAt(accepted.filter((r) => onceFailed.has(r.webhookId))) - recoveredAt) / 1000,
      unavailable: receiver.receipts.filter((r) => r.status === 503).length,
      byAttempts,
    };
  } finally {
    await db.end();
    await services.stopAll();
    await receiver.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function printReport(costs: CostRun[], outage: OutageRun): void {
  const best = (on: boolean) =>
    costs.filter((c) => c.webhooks === on).reduce((a, b) => (b.executions.throughput > a.executions.throughput ? b : a));
  const off = best(false);
  const on = best(true);
  const cost = 1 - on.executions.throughput / off.executions.throughput;
  const steady = costs.flatMap((c) => (c.deliveries ? [c] : []));
  const bestDeliveries = steady.reduce((a, b) => (b.deliveries!.throughput > a.deliveries!.throughput ? b : a));
  const lagP50 = Math.min(...steady.map((c) => c.deliveries!.p50));

  const rows = [...costs.map((c) => c.executions), ...steady.map((c) => c.deliveries!), outage.deliveries];
  const out: string[] = ['', machineLine(`Webhook delivery benchmark, ${settings.executions} executions a run, 1 worker process`), ''];
  out.push(...formatRows(rows, 'count'));
  out.push(
    '',
    'executions rows: p50/p99/mean = run time (started_at → finished_at); throughput = succeeded / (last finish − first start);',
    '                 wall = worker spawn → every execution final (incl. boot).',
    'deliveries rows: count = requests the receiver got (errors = messages never accepted); p50/p99/mean = lag from the',
    "                 execution's data.finishedAt to the receipt of its message's first accepted delivery;",
    '                 throughput = requests / (last receipt − first receipt) = wall.',
    '',
    'Where a steady delivery spends its time (first attempts, from the rows):',
    ...steady.map(
      (c) =>
        `  ${c.deliveries!.scenario}: message created → attempt started p50 ${fixed(c.breakdown!.queuedP50, 0)} ms, ` +
        `p99 ${fixed(c.breakdown!.queuedP99, 0)} ms; HTTP exchange p50 ${fixed(c.breakdown!.httpP50, 0)} ms, p99 ${fixed(c.breakdown!.httpP99, 0)} ms`,
    ),
    '',
    `Outage (${settings.outageMs / 1000} s of 503 once half the messages had arrived): ${outage.unavailable} requests answered 503; ` +
      `messages by attempts ${Object.entries(outage.byAttempts)
        .map(([attempts, count]) => `${attempts}: ${count}`)
        .join(', ')}`,
    `  recovery → last message that failed once delivered: ${fixed(outage.onceFailedSeconds, 1)} s (its retry ~5 s after the failure)`,
    `  recovery → backlog drained: ${fixed(outage.drainSeconds, 1)} s (set by the retry schedule: a message failing twice waits ~5 min ±20 %)`,
    '',
    'Targets:',
    `  deliveries/s ≥ ${TARGETS.deliveriesPerSecond} → ${fixed(bestDeliveries.deliveries!.throughput, 1)} ` +
      `${verdict(bestDeliveries.deliveries!.throughput >= TARGETS.deliveriesPerSecond)}`,
    `  lag p50 ≤ ${TARGETS.lagP50Ms} ms → ${fixed(lagP50, 1)} ms ${verdict(lagP50 <= TARGETS.lagP50Ms)}`,
    `  execution throughput cost ≤ ${TARGETS.executionCost * 100} % → ${fixed(cost * 100, 1)} % ` +
      `(best on ${fixed(on.executions.throughput, 1)}/s vs best off ${fixed(off.executions.throughput, 1)}/s) ${verdict(cost <= TARGETS.executionCost)}`,
    '',
  );
  process.stdout.write(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases);

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const license = await throwawayLicense('team');

  const costs: CostRun[] = [];
  // off, on, on, off, ...: a noisy machine's slow and fast moments fall on both alike.
  for (let run = 1; run <= settings.runs; run++) {
    for (const webhooks of run % 2 ? [false, true] : [true, false]) {
      if (interrupted.signal.aborted) throw new Error('interrupted');
      costs.push(await costRun(webhooks, run, license));
    }
  }
  const outage = await outageRun(license);
  printReport(costs, outage);
  const errors = [...costs.flatMap((c) => [c.executions, c.deliveries]), outage.deliveries].reduce((sum, r) => sum + (r?.errors ?? 0), 0);
  if (errors) throw new Error(`${errors} execution(s)/message(s) failed; see above`);
});
