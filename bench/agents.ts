/**
 * Agent execution benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL
 * database per phase, executing a transform.jsonata agent.
 *
 *   1. synchronous execute (?wait=30) latency with 1 and with 20 concurrent clients on two APP_ROLE=all
 *      processes side by side, one evaluating expressions inline (EXPRESSION_SANDBOX=inline, the way
 *      they ran before the sandbox) and one in the sandbox's worker threads (the default), with the
 *      requests alternating between them;
 *   2. asynchronous throughput: M executions enqueued (?wait=0) on an APP_ROLE=api process, then
 *      drained by 1 and by 2 APP_ROLE=worker processes; executions/s is measured from the rows.
 *
 * Run with `npm run bench:agents`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per phase is created on it and dropped at the end
 *   BENCH_WARMUP_REQUESTS            sync warm-up requests (200)
 *   BENCH_SYNC_REQUESTS              sync requests measured with 1 client (2000)
 *   BENCH_SYNC_CONCURRENT_REQUESTS   sync requests measured with BENCH_SYNC_CLIENTS clients (4000)
 *   BENCH_SYNC_CLIENTS               concurrent sync clients (20)
 *   BENCH_ASYNC_EXECUTIONS           executions enqueued per async phase (5000)
 *   BENCH_ENQUEUE_CLIENTS            concurrent enqueue clients (50)
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for the workers to finish them (600)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE passed through to the service processes
 */
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import {
  brief,
  field,
  fixed,
  formatRows,
  intFromEnv,
  JsonClient,
  loadRow,
  log,
  loginAndInstallTransform,
  machineLine,
  randomCredentials,
  reportErrors,
  Row,
  runInterleaved,
  runLoad,
  SANDBOX_MODES,
  ScratchDatabases,
  serviceEnv,
  startSandboxPair,
  Services,
  unexpected,
  verdict,
  waitForDrain,
  cleanupOnce,
  drainFigures,
  runBenchmark,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  warmupRequests: intFromEnv('BENCH_WARMUP_REQUESTS', 200),
  syncRequests: intFromEnv('BENCH_SYNC_REQUESTS', 2000),
  syncConcurrentRequests: intFromEnv('BENCH_SYNC_CONCURRENT_REQUESTS', 4000),
  syncClients: intFromEnv('BENCH_SYNC_CLIENTS', 20),
  asyncExecutions: intFromEnv('BENCH_ASYNC_EXECUTIONS', 5000),
  enqueueClients: intFromEnv('BENCH_ENQUEUE_CLIENTS', 50),
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 600) * 1000,
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

const TARGETS = { syncP50Ms: 10, syncP99Ms: 50, asyncPerSecond: 1000 };
/** Requests per turn when the sync load alternates between the two processes. */
const SYNC_CHUNK = 50;

/** Shared by every process of the run: tokens and encrypted secrets must be valid across them. */
const credentials = randomCredentials();

const AGENT = { name: 'bench', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };
const INPUT = { input: { text: 'hello' } };

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_${Date.now()}`);

// ---------------------------------------------------------------------------------------------
// API calls

/** Logs in once, installs the transform plugin and registers the agent. */
async function prepareAgent(service: JsonClient): Promise<{ client: JsonClient; agentId: string }> {
  const client = await loginAndInstallTransform(service, credentials);
  const agent = await client.request('POST', '/api/agents', AGENT);
  const agentId = field(agent.body, 'id');
  if (agent.status !== 201 || typeof agentId !== 'string') throw unexpected('agent creation', agent.status, agent.body);
  return { client, agentId };
}

/** One synchronous execution; null when it answered 200 succeeded with the expected output. */
async function executeAndWait(client: JsonClient, agentId: string): Promise<string | null> {
  const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=30`, INPUT);
  if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
  if (field(res.body, 'status') !== 'succeeded' || field(res.body, 'output') !== 'HELLO') return `200 but ${brief(res.body)}`;
  return null;
}

/** One queued execution; null when it answered 202 queued. */
async function enqueue(client: JsonClient, agentId: string): Promise<string | null> {
  const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=0`, INPUT);
  if (res.status !== 202 || field(res.body, 'status') !== 'queued') return `HTTP ${res.status} ${brief(res.body)}`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Phases

/**
 * Phase 1: synchronous latency on two APP_ROLE=all processes side by side, one evaluating
 * expressions inline (as before the sandbox) and one in the sandbox's threads; requests
 * alternate between them in chunks, so machine noise falls on both alike.
 */
async function syncPhase(): Promise<Row[]> {
  const modes = SANDBOX_MODES;
  const calls = await startSandboxPair({ databases, services, credentials, readyTimeoutMs: settings.readyTimeoutMs }, async (service) => {
    const { client, agentId } = await prepareAgent(service);
    return () => executeAndWait(client, agentId);
  });
  for (const sandbox of modes) {
    log(`sync (${sandbox}): warming up with ${settings.warmupRequests} requests`);
    reportErrors('warm-up', await runLoad(settings.syncClients, settings.warmupRequests, calls[sandbox], interrupted.signal));
  }
  log(`sync: ${settings.syncRequests} requests each, 1 client, interleaved`);
  const serial = await runInterleaved(calls, 1, settings.syncRequests, SYNC_CHUNK, interrupted.signal);
  log(`sync: ${settings.syncConcurrentRequests} requests each, ${settings.syncClients} clients, interleaved`);
  const concurrent = await runInterleaved(calls, settings.syncClients, settings.syncConcurrentRequests, SYNC_CHUNK * 2, interrupted.signal);

  services.assertAlive();
  await services.stopAll();
  return [
    ...modes.map((m) => loadRow(`sync execute ?wait=30, 1 client, ${m}`, serial[m])),
    ...modes.map((m) => loadRow(`sync execute ?wait=30, ${settings.syncClients} clients, ${m}`, concurrent[m])),
  ];
}

/** Phase 2: M executions queued on an API-only process, then drained by `workers` worker processes. */
async function asyncPhase(workers: number): Promise<Row[]> {
  const databaseUrl = await databases.create(`async_${workers}w`);
  log(`async ×${workers}: starting one APP_ROLE=api process`);
  const api = await services.start('api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs);
  const { client, agentId } = await prepareAgent(api);

  log(`async ×${workers}: enqueueing ${settings.asyncExecutions} executions, ${settings.enqueueClients} clients`);
  const queued = await runLoad(settings.enqueueClients, settings.asyncExecutions, () => enqueue(client, agentId), interrupted.signal);
  const enqueueRow = loadRow(`async enqueue ?wait=0, ${settings.enqueueClients} clients`, queued);

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log(`async ×${workers}: starting ${workers} APP_ROLE=worker process(es)`);
    const spawnedAt = performance.now();
    await Promise.all(
      Array.from({ length: workers }, (_, i) =>
        services.start(`worker ${i + 1}`, serviceEnv(credentials, databaseUrl, 'worker'), settings.readyTimeoutMs),
      ),
    );
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: agentId }, settings.asyncTimeoutMs, () => {
      services.assertAlive();
      if (interrupted.signal.aborted) throw new Error('interrupted');
    });
    const wallSeconds = (performance.now() - spawnedAt) / 1000;
    const drain = await drainFigures(db, agentId);
    services.assertAlive();
    const drainRow: Row = {
      scenario: `async drain, ${workers} worker${workers > 1 ? 's' : ''}`,
      count: drain.succeeded,
      errors: drain.total - drain.succeeded,
      p50: drain.p50,
      p99: drain.p99,
      mean: drain.mean,
      throughput: drain.throughput,
      wallSeconds,
    };
    return [enqueueRow, drainRow];
  } finally {
    await db.end();
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function printReport(rows: Row[]): void {
  const out: string[] = ['', machineLine('Agent execution benchmark'), ''];
  out.push(...formatRows(rows, 'requests/executions'));
  out.push(
    '',
    'sync rows: request latency; enqueue rows: request latency, throughput = enqueue rate, wall = enqueue time;',
    'drain rows: p50/p99/mean = per-execution run time (started_at → finished_at),',
    '            throughput = succeeded / (max(finished_at) − min(started_at)), wall = worker spawn → all final (incl. boot).',
    '',
    ...targetLines(rows),
    '',
  );
  process.stdout.write(out.join('\n'));
}

function targetLines(rows: Row[]): string[] {
  const serial = rows.find((r) => r.scenario.endsWith('1 client, threads'))!;
  const inline = rows.find((r) => r.scenario.endsWith('1 client, inline'))!;
  const drains = rows.filter((r) => r.scenario.startsWith('async drain'));
  return [
    `Sandbox cost per sync execution, 1 client: p50 ${fixed(serial.p50 - inline.p50, 2)} ms (threads − inline; ≤ 1 ms wanted)`,
    'Targets (sandboxed):',
    `  sync, 1 client: p50 ≤ ${TARGETS.syncP50Ms} ms → ${fixed(serial.p50, 2)} ms ${verdict(serial.p50 <= TARGETS.syncP50Ms)}; ` +
      `p99 ≤ ${TARGETS.syncP99Ms} ms → ${fixed(serial.p99, 2)} ms ${verdict(serial.p99 <= TARGETS.syncP99Ms)}`,
    ...drains.map(
      (r) =>
        `  ${r.scenario}: ≥ ${TARGETS.asyncPerSecond} executions/s → ${fixed(r.throughput, 1)} ${verdict(r.throughput >= TARGETS.asyncPerSecond)}`,
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases);

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const rows: Row[] = [];
  for (const phase of [syncPhase, () => asyncPhase(1), () => asyncPhase(2)]) {
    if (interrupted.signal.aborted) throw new Error('interrupted');
    rows.push(...(await phase()));
  }
  printReport(rows);
  const errors = rows.reduce((sum, r) => sum + r.errors, 0);
  if (errors) throw new Error(`${errors} request(s)/execution(s) failed; see above`);
});
