/**
 * Workflow benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL database
 * per phase; phases 1–3 run a 3-step workflow of transform.jsonata actions (a → b → c; {n: 5} → 13).
 *
 *   1. synchronous run (?wait=30) latency with 1 client on two APP_ROLE=all processes side by side,
 *      one evaluating expressions inline (EXPRESSION_SANDBOX=inline, the way they ran before the
 *      sandbox) and one in the sandbox's worker threads (the default), runs alternating between them;
 *   2. asynchronous throughput: M runs enqueued (?wait=0) on an APP_ROLE=api process, then
 *      drained by 1 and by 2 APP_ROLE=worker processes; runs/s is measured from the rows;
 *   3. run history paging at scale: runs bulk-inserted with SQL (nothing executes: APP_ROLE=api),
 *      first to BENCH_HISTORY_SMALL then to BENCH_HISTORY_LARGE runs of the workflow, next to runs
 *      of another workflow and of another organization; at each scale the first page, pages
 *      followed through nextCursor from the top and from deep in the history, and the
 *      EXPLAIN (ANALYZE, BUFFERS) of the history query at the deep cursor;
 *   4. sleeping runs: BENCH_SLEEP_RUNS runs of a workflow that sleeps BENCH_SLEEP_SECONDS (a durable
 *      sleep step) and then runs one transform step, enqueued (?wait=0) on an APP_ROLE=api process
 *      with one APP_ROLE=worker process running; once every run has begun its sleep, halfway to the
 *      first run's due time (at once if it has come), the workflow-run jobs active in the queue (each
 *      holds a worker slot; expected 0) and the runs waiting; per run, the resume delay (the
 *      transform step's start − the sleep's due time) from the step rows;
 *   5. map: BENCH_MAP_RUNS runs, one after the other, of a workflow whose one step maps a
 *      transform.jsonata action ($ * 2) over the BENCH_MAP_ITEMS numbers of its input, at
 *      BENCH_MAP_CONCURRENCY, on one APP_ROLE=all process; per run, items/s from the item rows
 *      (items / (last item's finished_at − first item's started_at)), its time and its output;
 *   6. child runs: synchronous run (?wait=30) latency with 1 client on one APP_ROLE=all process of
 *      a plain 1-step workflow and of a parent whose one step runs a 1-step child workflow (the
 *      parent waits without a worker and the child's end wakes it), runs alternating between them;
 *   7. approvals: BENCH_APPROVAL_RUNS runs, one after the other, of a workflow that waits for an
 *      approval and then runs one transform step, on one APP_ROLE=all process; once a run waits,
 *      its approval is given (POST .../steps/approve/complete) and the round trip is the run's
 *      finished_at − the moment that request was sent.
 *      parent waits without a worker and the child's end wakes it), runs alternating between them;
 *   8. live events: BENCH_SSE_STREAMS runs of a workflow of three transform steps with two 1 s
 *      sleeps between them, enqueued (?wait=0) on an APP_ROLE=api process and run by one
 *      APP_ROLE=worker process, each followed by a client streaming its events from the API
 *      process (so every event crosses processes through LISTEN/NOTIFY); per final transition
 *      (a step's or the run's end), the latency from its finished_at in the record to its event.
 *      parent waits without a worker and the child's end wakes it), runs alternating between them;
 *   9. concurrency: as phase 2 with one worker, BENCH_CONCURRENCY_RUNS runs of the 3-step workflow
 *      drained without a limit, then of the same workflow with `concurrency` {limit:
 *      BENCH_CONCURRENCY_LIMIT, key over the input, one key for every run}; runs/s of each, and
 *      the most runs of the limited one in progress at once (from the rows; never above the limit).
 *
 * Run with `npm run bench:workflows`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per phase is created on it and dropped at the end
 *   BENCH_PHASES                     phases to run, comma-separated (sync,async,history,sleep,map,child,approval,sse,concurrency)
 *   BENCH_WARMUP_REQUESTS            sync warm-up runs (200)
 *   BENCH_SYNC_REQUESTS              sync runs measured with 1 client (1000)
 *   BENCH_WORKFLOW_RUNS              runs enqueued per async phase (3000)
 *   BENCH_ENQUEUE_CLIENTS            concurrent enqueue clients (50)
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for the workers to finish them (600)
 *   BENCH_HISTORY_SMALL              runs of the workflow at the first history scale (10000)
 *   BENCH_HISTORY_LARGE              runs of the workflow at the second history scale (1000000)
 *   BENCH_HISTORY_NOISE              runs of each other workflow (another one of the organization,
 *                                    one of another organization) (5000)
 *   BENCH_HISTORY_PAGES              pages followed through nextCursor per measurement (50)
 *   BENCH_FIRST_PAGE_REQUESTS        first-page requests per scale (100)
 *   BENCH_INSERT_CHUNK               rows per INSERT statement (100000)
 *   BENCH_SLEEP_RUNS                 sleeping runs enqueued (1000)
 *   BENCH_SLEEP_SECONDS              how long each of them sleeps (5)
 *   BENCH_MAP_ITEMS                  items of each map run (1000)
 *   BENCH_MAP_CONCURRENCY            the map step's concurrency (10)
 *   BENCH_MAP_RUNS                   map runs, one after the other (3)
 *   BENCH_CHILD_WARMUP_RUNS          warm-up runs of each child-phase workflow (10)
 *   BENCH_CHILD_RUNS                 runs of each child-phase workflow measured with 1 client (100)
 *   BENCH_APPROVAL_RUNS              approved runs, one after the other (200)
 *   BENCH_SSE_STREAMS                runs followed by an open event stream each (100)
 *   BENCH_CONCURRENCY_RUNS           runs of each concurrency-phase drain (1000)
 *   BENCH_CONCURRENCY_LIMIT          the limited workflow's concurrency limit (10)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE passed through to the service processes
 */
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import { openEventStream } from '../test/support/event-stream';
import {
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
  BENCH_WORKFLOW_OUTPUT,
  brief,
  createWorkflow,
  field,
  fixed,
  formatRows,
  intFromEnv,
  JsonClient,
  LoadResult,
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
  summarize,
  ScratchDatabases,
  serviceEnv,
  startSandboxPair,
  Services,
  unexpected,
  verdict,
  waitForDrain,
  cleanupOnce,
  runBenchmark,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const PHASES = ['sync', 'async', 'history', 'sleep', 'map', 'child', 'approval', 'sse', 'concurrency'] as const;
type Phase = (typeof PHASES)[number];

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  phases: phasesFromEnv(),
  warmupRequests: intFromEnv('BENCH_WARMUP_REQUESTS', 200),
  syncRequests: intFromEnv('BENCH_SYNC_REQUESTS', 1000),
  asyncRuns: intFromEnv('BENCH_WORKFLOW_RUNS', 3000),
  enqueueClients: intFromEnv('BENCH_ENQUEUE_CLIENTS', 50),
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 600) * 1000,
  historySmall: intFromEnv('BENCH_HISTORY_SMALL', 10_000),
  historyLarge: intFromEnv('BENCH_HISTORY_LARGE', 1_000_000),
  historyNoise: intFromEnv('BENCH_HISTORY_NOISE', 5000),
  historyPages: intFromEnv('BENCH_HISTORY_PAGES', 50),
  firstPageRequests: intFromEnv('BENCH_FIRST_PAGE_REQUESTS', 100),
  insertChunk: intFromEnv('BENCH_INSERT_CHUNK', 100_000),
  sleepRuns: intFromEnv('BENCH_SLEEP_RUNS', 1000),
  sleepSeconds: intFromEnv('BENCH_SLEEP_SECONDS', 5),
  mapItems: intFromEnv('BENCH_MAP_ITEMS', 1000),
  mapConcurrency: intFromEnv('BENCH_MAP_CONCURRENCY', 10),
  mapRuns: intFromEnv('BENCH_MAP_RUNS', 3),
  childWarmupRuns: intFromEnv('BENCH_CHILD_WARMUP_RUNS', 10),
  childRuns: intFromEnv('BENCH_CHILD_RUNS', 100),
  approvalRuns: intFromEnv('BENCH_APPROVAL_RUNS', 200),
  sseStreams: intFromEnv('BENCH_SSE_STREAMS', 100),
  concurrencyRuns: intFromEnv('BENCH_CONCURRENCY_RUNS', 1000),
  concurrencyLimit: intFromEnv('BENCH_CONCURRENCY_LIMIT', 10),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

function phasesFromEnv(): Phase[] {
  const raw = (process.env.BENCH_PHASES || PHASES.join(',')).split(',').map((p) => p.trim());
  const unknown = raw.filter((p) => !PHASES.includes(p as Phase));
  if (unknown.length) throw new Error(`BENCH_PHASES: unknown phase(s) ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  return PHASES.filter((p) => raw.includes(p));
}

const TARGETS = {
  syncP50Ms: 12,
  asyncPerSecond: 300,
  resumeP99Ms: 1000,
  mapItemsPerSecond: 1000,
  childToPlainRatio: 2,
  approvalP99Ms: 50,
  sseP99Ms: 100,
  /** The drain limited on one concurrency key, against the unlimited one. */
  limitedToUnlimitedRatio: 0.5,
};

/** Page size of the history requests (the API's default). */
const PAGE_SIZE = 20;
/** Where the deep pages start, as a fraction of the workflow's runs from the newest. */
const DEEP_FRACTION = 0.9;
const HISTORY_INDEX = 'workflow_runs_workflow_created_idx';

const credentials = randomCredentials();

const WORKFLOW = BENCH_WORKFLOW;
const INPUT = { input: BENCH_WORKFLOW_INPUT };
const OUTPUT = BENCH_WORKFLOW_OUTPUT;

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_wf_${Date.now()}`);

/** The EXPLAIN of the history query at one scale. */
interface Plan {
  scale: string;
  text: string;
  usesIndex: boolean;
}

/** Notes printed under the table: bulk insert times. */
const notes: string[] = [];

/** What a phase adds to the report. */
interface Outcome {
  rows: Row[];
  plans?: Plan[];
  sleep?: SleepCheck;
  concurrency?: ConcurrencyCheck;
}

// ---------------------------------------------------------------------------------------------
// API calls

/** Logs in once, installs the transform plugin and creates the workflow. */
async function prepareWorkflow(service: JsonClient): Promise<{ client: JsonClient; workflowId: string; version: number }> {
  const client = await loginAndInstallTransform(service, credentials);
  const { id, version } = await createWorkflow(client, WORKFLOW);
  return { client, workflowId: id, version };
}

/** One synchronous run; null when it answered 200 succeeded with the expected output (as JSON). */
async function runAndWait(client: JsonClient, workflowId: string, expected: unknown = OUTPUT): Promise<string | null> {
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=30`, INPUT);
  if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
  if (field(res.body, 'status') !== 'succeeded' || JSON.stringify(field(res.body, 'output')) !== JSON.stringify(expected))
    return `200 but ${brief(res.body)}`;
  return null;
}

/** One queued run; null when it answered 202 queued. */
async function enqueue(client: JsonClient, workflowId: string, body: object = INPUT): Promise<string | null> {
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=0`, body);
  if (res.status !== 202 || field(res.body, 'status') !== 'queued') return `HTTP ${res.status} ${brief(res.body)}`;
  return null;
}

/** Throws when a service died or the run was interrupted. */
function assertGoingOn(): void {
  services.assertAlive();
  if (interrupted.signal.aborted) throw new Error('interrupted');
}

// ---------------------------------------------------------------------------------------------
// Phases 1 and 2: execution

/**
 * Phase 1: synchronous latency at 1 client on two APP_ROLE=all processes side by side, one
 * evaluating expressions inline (as before the sandbox) and one in the sandbox's threads; runs
 * alternate between them in chunks, so machine noise falls on both alike.
 */
async function syncPhase(): Promise<Row[]> {
  const modes = SANDBOX_MODES;
  const calls = await startSandboxPair({ databases, services, credentials, readyTimeoutMs: settings.readyTimeoutMs }, async (service) => {
    const { client, workflowId } = await prepareWorkflow(service);
    return () => runAndWait(client, workflowId);
  });
  for (const sandbox of modes) {
    log(`sync (${sandbox}): warming up with ${settings.warmupRequests} runs`);
    reportErrors('warm-up', await runLoad(1, settings.warmupRequests, calls[sandbox], interrupted.signal));
  }
  log(`sync: ${settings.syncRequests} runs each, 1 client, interleaved`);
  const serial = await runInterleaved(calls, 1, settings.syncRequests, 50, interrupted.signal);

  services.assertAlive();
  await services.stopAll();
  return modes.map((m) => loadRow(`sync run ?wait=30, 1 client, ${m}`, serial[m]));
}

/** Phase 2: M runs queued on an API-only process, then drained by `workers` worker processes. */
async function asyncPhase(workers: number): Promise<Row[]> {
  const { enqueueRow, drainRow } = await queuedDrain({ name: `async_${workers}w`, label: 'async', workers, runs: settings.asyncRuns });
  return [enqueueRow, { ...drainRow, scenario: `async drain, ${workers} worker${workers > 1 ? 's' : ''}` }];
}

interface DrainOptions {
  /** The scratch database's suffix. */
  name: string;
  label: string;
  workers: number;
  runs: number;
  /** The workflow's concurrency, when it has one. */
  concurrency?: object;
}

/**
 * `runs` runs of the workflow queued on an API-only process, then drained by `workers` worker
 * processes; the enqueue and drain rows (the drain's scenario to be named by the caller), and
 * the most runs that were in progress at once (from the rows).
 */
async function queuedDrain(options: DrainOptions): Promise<{ enqueueRow: Row; drainRow: Row; mostAtOnce: number }> {
  const { label, workers } = options;
  const databaseUrl = await databases.create(options.name);
  log(`${label} ×${workers}: starting one APP_ROLE=api process`);
  const api = await services.start('api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(api, credentials);
  const { id: workflowId } = await createWorkflow(client, {
    ...WORKFLOW,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
  });

  log(`${label} ×${workers}: enqueueing ${options.runs} runs, ${settings.enqueueClients} clients`);
  const queued = await runLoad(settings.enqueueClients, options.runs, () => enqueue(client, workflowId), interrupted.signal);
  const enqueueRow = loadRow(`${label} enqueue ?wait=0, ${settings.enqueueClients} clients`, queued);

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log(`${label} ×${workers}: starting ${workers} APP_ROLE=worker process(es)`);
    const spawnedAt = performance.now();
    await Promise.all(
      Array.from({ length: workers }, (_, i) =>
        services.start(`worker ${i + 1}`, serviceEnv(credentials, databaseUrl, 'worker'), settings.readyTimeoutMs),
      ),
    );
    await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: workflowId }, settings.asyncTimeoutMs, assertGoingOn);
    const wallSeconds = (performance.now() - spawnedAt) / 1000;
    const drain = await drainFigures(db, workflowId);
    services.assertAlive();
    if (drain.total !== drain.succeeded) log(`${label} ×${workers}: runs by status: ${JSON.stringify(drain.statuses)}`);
    if (drain.badOutputs) log(`${label} ×${workers}: ${drain.badOutputs} succeeded run(s) without output ${OUTPUT} or 3 succeeded steps`);
    const drainRow: Row = {
      scenario: label,
      count: drain.total,
      errors: drain.total - drain.succeeded + drain.badOutputs,
      p50: drain.p50,
      p99: drain.p99,
      mean: drain.mean,
      throughput: drain.throughput,
      wallSeconds,
    };
    return { enqueueRow, drainRow, mostAtOnce: await mostAtOnce(db, workflowId) };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/** The most runs of the workflow in progress at once (started_at → finished_at; one ending as another starts do not overlap). */
async function mostAtOnce(db: Client, workflowId: string): Promise<number> {
  return scalar<number>(
    db,
    `WITH edges AS (
       SELECT started_at AS at, 1 AS delta FROM workflow_runs WHERE workflow_id = $1 AND started_at IS NOT NULL
       UNION ALL
       SELECT finished_at, -1 FROM workflow_runs WHERE workflow_id = $1 AND started_at IS NOT NULL
     ) SELECT COALESCE(max(n), 0)::int FROM (SELECT sum(delta) OVER (ORDER BY at, delta ROWS UNBOUNDED PRECEDING) AS n FROM edges) x`,
    [workflowId],
  );
}

interface DrainFigures {
  total: number;
  succeeded: number;
  /** Succeeded runs whose output is not 13 or that do not have 3 succeeded steps. */
  badOutputs: number;
  statuses: Record<string, number>;
  /** Succeeded runs per second between the first start and the last finish. */
  throughput: number;
  /** Per-run time (started_at → finished_at), ms. */
  p50: number;
  p99: number;
  mean: number;
}

/** Throughput and run times from the rows, so worker boot time does not count. */
async function drainFigures(db: Client, workflowId: string): Promise<DrainFigures> {
  const { rows } = await db.query<Omit<DrainFigures, 'statuses'>>(
    `WITH runs AS (
       SELECT r.status, r.output, r.started_at, r.finished_at, extract(epoch FROM r.finished_at - r.started_at) * 1000 AS ms,
              (SELECT count(*) FROM workflow_run_steps s WHERE s.run_id = r.id AND s.status = 'succeeded') AS steps_ok
         FROM workflow_runs r WHERE r.workflow_id = $1)
     SELECT (SELECT count(*) FROM runs)::int AS total,
            count(*)::int AS succeeded,
            count(*) FILTER (WHERE output IS DISTINCT FROM $2::jsonb OR steps_ok <> 3)::int AS "badOutputs",
            (count(*) / nullif(extract(epoch FROM max(finished_at) - min(started_at)), 0))::float8 AS throughput,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::float8 AS p50,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::float8 AS p99,
            avg(ms)::float8 AS mean
       FROM runs WHERE status = 'succeeded'`,
    [workflowId, JSON.stringify(OUTPUT)],
  );
  const byStatus = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM workflow_runs WHERE workflow_id = $1 GROUP BY status',
    [workflowId],
  );
  return { ...rows[0], statuses: Object.fromEntries(byStatus.rows.map((r) => [r.status, r.n])) };
}

// ---------------------------------------------------------------------------------------------
// Phase 3: run history at scale

/** What the bulk inserts need to know about the database. */
interface HistoryContext {
  db: Client;
  client: JsonClient;
  organizationId: string;
  workflowId: string;
  version: number;
  triggeredBy: string;
  /** created_at of run g is base − g seconds. */
  base: Date;
}

/** Phase 3: history paging with BENCH_HISTORY_SMALL, then BENCH_HISTORY_LARGE runs of the workflow. */
async function historyPhase(): Promise<Outcome> {
  const databaseUrl = await databases.create('history');
  log('history: starting one APP_ROLE=api process (migrations, workflow; nothing executes)');
  const api = await services.start('api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs);
  const { client, workflowId, version } = await prepareWorkflow(api);
  const sibling = await createWorkflow(client, { ...WORKFLOW, name: 'bench-sibling' });

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const organizationId = await scalar<string>(db, "SELECT id FROM organizations WHERE slug = 'default'");
    const adminId = await scalar<string>(db, 'SELECT id FROM users WHERE email = $1', [credentials.ADMIN_EMAIL.toLowerCase()]);
    const base = await scalar<Date>(db, 'SELECT now()');
    const ctx: HistoryContext = {
      db,
      client,
      organizationId,
      workflowId,
      version,
      triggeredBy: JSON.stringify({ type: 'user', id: adminId }),
      base,
    };

    // Neighbours in the same table over the same time span: another workflow of the organization
    // and a workflow of another organization.
    const otherOrganization = randomUUID();
    const otherWorkflow = randomUUID();
    await db.query(
      "INSERT INTO organizations (id, slug, name, tier, created_at) VALUES ($1, 'bench-other', 'Bench other', 'starter', now())",
      [otherOrganization],
    );
    await db.query(
      `INSERT INTO workflows (id, organization_id, name, version, created_by, created_at, updated_at)
       VALUES ($1, $2, 'bench-other', 1, $3, now(), now())`,
      [otherWorkflow, otherOrganization, adminId],
    );
    log(`history: inserting ${settings.historyNoise} runs into each of 2 other workflows`);
    const spread = settings.historyLarge / settings.historyNoise;
    await insertRuns(ctx, { organizationId, workflowId: sibling.id, version: sibling.version }, 1, settings.historyNoise, spread);
    await insertRuns(ctx, { organizationId: otherOrganization, workflowId: otherWorkflow, version: 1 }, 1, settings.historyNoise, spread);

    const rows: Row[] = [];
    const plans: Plan[] = [];
    let inserted = 0;
    for (const scale of [settings.historySmall, settings.historyLarge]) {
      if (interrupted.signal.aborted) throw new Error('interrupted');
      if (scale <= inserted) continue;
      const label = `${compact(scale)} runs`;
      log(`history: inserting runs ${inserted + 1}…${scale} of the workflow`);
      const begin = performance.now();
      await insertRuns(ctx, { organizationId, workflowId, version }, inserted + 1, scale, 1);
      const insertSeconds = (performance.now() - begin) / 1000;
      const analyzeBegin = performance.now();
      await db.query('ANALYZE workflow_runs');
      const analyzeSeconds = (performance.now() - analyzeBegin) / 1000;
      const count = await scalar<number>(db, 'SELECT count(*)::int FROM workflow_runs WHERE workflow_id = $1', [workflowId]);
      if (count !== scale) throw new Error(`expected ${scale} runs of the workflow, found ${count}`);
      notes.push(
        `  ${label}: inserted ${scale - inserted} rows in ${fixed(insertSeconds, 1)} s ` +
          `(${fixed((scale - inserted) / insertSeconds, 0)} rows/s), ANALYZE ${fixed(analyzeSeconds, 1)} s`,
      );
      inserted = scale;

      log(`history ${label}: measuring`);
      rows.push(...(await measureHistory(ctx, label, scale)));
      plans.push(await explainDeep(ctx, label, scale));
      services.assertAlive();
    }
    notes.push(
      `  plus ${settings.historyNoise} runs of another workflow of the organization and ${settings.historyNoise} of another organization`,
    );
    return { rows, plans };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/**
 * Inserts runs `from`…`to` (inclusive) of one workflow, succeeded, created at base − g × spacing
 * seconds, in statements of BENCH_INSERT_CHUNK rows.
 */
async function insertRuns(
  ctx: HistoryContext,
  target: { organizationId: string; workflowId: string; version: number },
  from: number,
  to: number,
  spacingSeconds: number,
): Promise<void> {
  for (let start = from; start <= to; start += settings.insertChunk) {
    if (interrupted.signal.aborted) throw new Error('interrupted');
    const end = Math.min(to, start + settings.insertChunk - 1);
    await ctx.db.query(
      `INSERT INTO workflow_runs (id, organization_id, workflow_id, workflow_version, status, input, output, attempts, timeout_ms,
                                  triggered_by, created_at, started_at, finished_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', '{"n":5}', '13', 1, 3600000, $4::jsonb,
              t, t + interval '2 ms', t + interval '12 ms'
         FROM (SELECT $5::timestamptz - (g * $6::float8) * interval '1 second' AS t FROM generate_series($7::int, $8::int) g) runs`,
      [target.organizationId, target.workflowId, target.version, ctx.triggeredBy, ctx.base, spacingSeconds, start, end],
    );
  }
}

/** First page, pages 2… through nextCursor, and pages from DEEP_FRACTION of the history through nextCursor. */
async function measureHistory(ctx: HistoryContext, label: string, scale: number): Promise<Row[]> {
  const path = (cursor?: string) =>
    `/api/workflows/${ctx.workflowId}/runs?limit=${PAGE_SIZE}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');

  // First page: the newest runs, each request from scratch.
  const newest = await keysetRows(ctx, 0, PAGE_SIZE);
  const firstPage = async (): Promise<string | null> => {
    const res = await ctx.client.request('GET', path());
    return checkPage(ctx, res.status, res.body, newest);
  };
  reportErrors(`history ${label}: first-page warm-up`, await runLoad(1, 10, firstPage, interrupted.signal));
  const first = await runLoad(1, settings.firstPageRequests, firstPage, interrupted.signal);

  // From the top: the cursor of page 1, then nextCursor page after page.
  const top = await ctx.client.request('GET', path());
  const topCursor = field(top.body, 'nextCursor');
  if (top.status !== 200 || typeof topCursor !== 'string') throw unexpected(`history ${label}: first page`, top.status, top.body);
  const fromTop = await followPages(ctx, path, topCursor, PAGE_SIZE);

  // Deep: a cursor at the run DEEP_FRACTION of the way back, in the API's cursor encoding
  // (following nextCursor there would take scale / PAGE_SIZE requests), then nextCursor onwards.
  const deepOffset = deepOffsetOf(scale);
  const [position] = await keysetRows(ctx, deepOffset - 1, 1);
  const deepCursor = Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
  const deep = await followPages(ctx, path, deepCursor, deepOffset);

  const pages = settings.historyPages;
  return [
    loadRow(`history ${label}: first page (limit ${PAGE_SIZE})`, first),
    loadRow(`history ${label}: pages 2–${pages + 1} via nextCursor`, fromTop),
    loadRow(`history ${label}: ${pages} pages from ${DEEP_FRACTION * 100}% deep`, deep),
  ];
}

/** The offset (from the newest) of the first run of the deep pages, kept on a page boundary. */
function deepOffsetOf(scale: number): number {
  const pageRows = settings.historyPages * PAGE_SIZE;
  const offset = Math.floor((scale * DEEP_FRACTION) / PAGE_SIZE) * PAGE_SIZE;
  return Math.max(PAGE_SIZE, Math.min(offset, scale - pageRows));
}

/** BENCH_HISTORY_PAGES requests, each with the nextCursor of the one before; each page checked against the table. */
async function followPages(ctx: HistoryContext, path: (cursor?: string) => string, cursor: string, offset: number): Promise<LoadResult> {
  const expected = await keysetRows(ctx, offset, settings.historyPages * PAGE_SIZE);
  let next: string | null = cursor;
  let page = 0;
  return runLoad(
    1,
    settings.historyPages,
    async () => {
      if (next === null) return 'no nextCursor on the page before';
      const res = await ctx.client.request('GET', path(next));
      const want = expected.slice(page * PAGE_SIZE, ++page * PAGE_SIZE);
      const cursorOrNull = field(res.body, 'nextCursor');
      next = typeof cursorOrNull === 'string' ? cursorOrNull : null;
      return checkPage(ctx, res.status, res.body, want);
    },
    interrupted.signal,
  );
}

/** null when the page is 200 and holds exactly the expected runs of the workflow, in order. */
function checkPage(ctx: HistoryContext, status: number, body: unknown, expected: KeysetRow[]): string | null {
  if (status !== 200) return `HTTP ${status} ${brief(body)}`;
  const data = field(body, 'data');
  if (!Array.isArray(data)) return `200 without data: ${brief(body)}`;
  const ids = data.map((r) => field(r, 'id'));
  const want = expected.map((r) => r.id);
  if (ids.join() !== want.join())
    return `page of ${ids.length} runs starting ${String(ids[0])}, expected ${want.length} starting ${want[0]}`;
  if (data.some((r) => field(r, 'workflowId') !== ctx.workflowId || field(r, 'output') !== OUTPUT)) return `foreign run on the page`;
  return null;
}

interface KeysetRow {
  id: string;
  createdAt: Date;
}

/** The workflow's runs at `offset`… in history order, straight from the table. */
async function keysetRows(ctx: HistoryContext, offset: number, limit: number): Promise<KeysetRow[]> {
  const { rows } = await ctx.db.query<KeysetRow>(
    `SELECT id, created_at AS "createdAt" FROM workflow_runs WHERE organization_id = $1 AND workflow_id = $2
      ORDER BY created_at DESC, id DESC OFFSET $3 LIMIT $4`,
    [ctx.organizationId, ctx.workflowId, offset, limit],
  );
  return rows;
}

/** The service's history query (limit + 1 rows) at the deep cursor, as EXPLAIN (ANALYZE, BUFFERS). */
async function explainDeep(ctx: HistoryContext, label: string, scale: number): Promise<Plan> {
  const offset = deepOffsetOf(scale);
  const [position] = await keysetRows(ctx, offset - 1, 1);
  const { rows } = await ctx.db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS)
     SELECT * FROM workflow_runs WHERE organization_id = $1 AND workflow_id = $2 AND (created_at, id) < ($3, $4)
      ORDER BY created_at DESC, id DESC LIMIT $5`,
    [ctx.organizationId, ctx.workflowId, position.createdAt, position.id, PAGE_SIZE + 1],
  );
  const text = rows.map((r) => r['QUERY PLAN']).join('\n');
  const usesIndex =
    new RegExp(`Index Scan( Backward)? using ${HISTORY_INDEX} on workflow_runs`).test(text) && !/\bSort\b|Seq Scan/.test(text);
  return { scale: `${label}, cursor at run ${offset} from the newest`, text, usesIndex };
}

async function scalar<T>(db: Client, sql: string, params: unknown[] = []): Promise<T> {
  const { rows } = await db.query<Record<string, T>>(sql, params);
  if (!rows.length) throw new Error(`no row for ${sql}`);
  return Object.values(rows[0])[0];
}

function compact(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

// ---------------------------------------------------------------------------------------------
// Phase 4: sleeping runs

/** A durable sleep of BENCH_SLEEP_SECONDS, then one transform step. */
const SLEEP_WORKFLOW = {
  name: 'bench-sleep',
  steps: [
    { id: 'nap', sleep: { seconds: settings.sleepSeconds } },
    { id: 'after', action: 'transform.jsonata', with: { expression: '$' }, needs: ['nap'] },
  ],
};

/**
 * The due time of the sleep step `n`: resume_at while it waits; the step clears it when it
 * succeeds, and its output keeps the same time as `until`.
 */
const NAP_DUE = "COALESCE(n.resume_at, (n.output ->> 'until')::timestamptz)";

const RESUME_SCENARIO = 'sleeping runs, resume delay (due → resumed)';

/** What the sleeping runs showed besides the row. */
interface SleepCheck {
  /** workflow-run jobs active in the queue mid-sleep (each holds a worker slot). */
  activeJobs: number;
  /** Runs in status waiting at that moment, of `runs`. */
  waiting: number;
  runs: number;
  /** From that moment to the first run's due time, s (negative when it had passed). */
  leadSeconds: number;
  /** The longest resume delay, ms. */
  maxDelay: number;
}

/**
 * Phase 4: BENCH_SLEEP_RUNS runs that sleep, enqueued on an APP_ROLE=api process with one
 * APP_ROLE=worker process running; counted once mid-sleep, then timed from their step rows.
 */
async function sleepPhase(): Promise<Outcome> {
  const databaseUrl = await databases.create('sleep');
  log('sleep: starting one APP_ROLE=api process');
  const api = await services.start('api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(api, credentials);
  const { id: workflowId } = await createWorkflow(client, SLEEP_WORKFLOW);
  log('sleep: starting one APP_ROLE=worker process');
  await services.start('worker', serviceEnv(credentials, databaseUrl, 'worker'), settings.readyTimeoutMs);

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log(`sleep: enqueueing ${settings.sleepRuns} runs sleeping ${settings.sleepSeconds} s, ${settings.enqueueClients} clients`);
    const begin = performance.now();
    const body = { input: {} };
    const queued = await runLoad(settings.enqueueClients, settings.sleepRuns, () => enqueue(client, workflowId, body), interrupted.signal);
    const enqueueRow = loadRow(`sleeping runs: enqueue ?wait=0, ${settings.enqueueClients} clients`, queued);
    const midSleep = await sampleMidSleep(db, workflowId);
    log(
      `sleep: mid-sleep ${midSleep.activeJobs} active job(s), ${midSleep.waiting} of ${midSleep.runs} runs waiting; waiting for all to finish`,
    );
    const timeoutMs = settings.asyncTimeoutMs + settings.sleepSeconds * 1000;
    await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: workflowId }, timeoutMs, assertGoingOn);
    const wallSeconds = (performance.now() - begin) / 1000;
    const delays = await resumeDelays(db, workflowId);
    services.assertAlive();
    if (delays.succeeded !== delays.total) await logFailures(db, workflowId);
    const row: Row = {
      scenario: RESUME_SCENARIO,
      count: delays.total,
      errors: delays.total - delays.succeeded,
      p50: delays.p50,
      p99: delays.p99,
      mean: delays.mean,
      throughput: NaN,
      wallSeconds,
    };
    return { rows: [enqueueRow, row], sleep: { ...midSleep, maxDelay: delays.max } };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/**
 * Once every run has begun its sleep, waits half the time left to the first run's due time (none
 * if it has come), then counts the workflow-run jobs active in the queue and the runs waiting.
 */
async function sampleMidSleep(db: Client, workflowId: string): Promise<Omit<SleepCheck, 'maxDelay'>> {
  const deadline = Date.now() + settings.asyncTimeoutMs;
  for (;;) {
    const { rows } = await db.query<{ pending: number; firstDue: Date | null }>(
      `SELECT count(*) FILTER (WHERE n.status = 'pending')::int AS pending, min(${NAP_DUE}) AS "firstDue"
         FROM workflow_runs r JOIN workflow_run_steps n ON n.run_id = r.id AND n.step_id = 'nap'
        WHERE r.workflow_id = $1`,
      [workflowId],
    );
    const { pending, firstDue } = rows[0];
    if (!pending) {
      const firstDueAt = firstDue?.getTime() ?? Date.now();
      if (firstDueAt > Date.now()) await delay((firstDueAt - Date.now()) / 2);
      const { rows: counts } = await db.query<{ activeJobs: number; waiting: number; runs: number }>(
        `SELECT (SELECT count(*) FROM pgboss.job WHERE name = 'workflow-run' AND state = 'active')::int AS "activeJobs",
                count(*) FILTER (WHERE status = 'waiting')::int AS waiting,
                count(*)::int AS runs
           FROM workflow_runs WHERE workflow_id = $1`,
        [workflowId],
      );
      return { ...counts[0], leadSeconds: (firstDueAt - Date.now()) / 1000 };
    }
    assertGoingOn();
    if (Date.now() > deadline) throw new Error(`after ${settings.asyncTimeoutMs / 1000} s ${pending} run(s) had not begun their sleep`);
    await delay(200);
  }
}

interface ResumeDelays {
  total: number;
  succeeded: number;
  /** The after step's start − the sleep's due time, ms, over the succeeded runs. */
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** The resume delay of each succeeded run, from its step rows. */
async function resumeDelays(db: Client, workflowId: string): Promise<ResumeDelays> {
  const { rows } = await db.query<ResumeDelays>(
    `WITH runs AS (
       SELECT r.status, extract(epoch FROM a.started_at - ${NAP_DUE}) * 1000 AS ms
         FROM workflow_runs r
         JOIN workflow_run_steps n ON n.run_id = r.id AND n.step_id = 'nap'
         JOIN workflow_run_steps a ON a.run_id = r.id AND a.step_id = 'after'
        WHERE r.workflow_id = $1)
     SELECT (SELECT count(*) FROM runs)::int AS total,
            count(*)::int AS succeeded,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::float8 AS p50,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::float8 AS p99,
            avg(ms)::float8 AS mean,
            max(ms)::float8 AS max
       FROM runs WHERE status = 'succeeded'`,
    [workflowId],
  );
  return rows[0];
}

/** Logs the runs by status and the step rows of one run that did not succeed. */
async function logFailures(db: Client, workflowId: string): Promise<void> {
  const byStatus = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM workflow_runs WHERE workflow_id = $1 GROUP BY status',
    [workflowId],
  );
  log(`sleep: runs by status: ${JSON.stringify(Object.fromEntries(byStatus.rows.map((r) => [r.status, r.n])))}`);
  const { rows } = await db.query(
    `SELECT r.id AS run_id, r.status AS run_status, r.error AS run_error, s.step_id, s.status, s.attempts, s.error,
            s.resume_at, s.reason, s.started_at, s.finished_at
       FROM workflow_run_steps s JOIN workflow_runs r ON r.id = s.run_id
      WHERE s.run_id = (SELECT id FROM workflow_runs WHERE workflow_id = $1 AND status <> 'succeeded' LIMIT 1)
      ORDER BY s.position`,
    [workflowId],
  );
  if (rows.length) log(`sleep: steps of a run that did not succeed:\n    ${rows.map((r) => JSON.stringify(r)).join('\n    ')}`);
}

// ---------------------------------------------------------------------------------------------
// Phases 5 and 6: map and child runs

/** A scratch database for `phase` and one APP_ROLE=all process on it, logged in with the transform plugin. */
async function startWorking(phase: string): Promise<{ client: JsonClient; databaseUrl: string }> {
  const databaseUrl = await databases.create(phase);
  log(`${phase}: starting one APP_ROLE=all process`);
  const service = await services.start(phase, serviceEnv(credentials, databaseUrl, 'all'), settings.readyTimeoutMs);
  return { client: await loginAndInstallTransform(service, credentials), databaseUrl };
}

/** One step mapping transform.jsonata ($ * 2) over input.items, BENCH_MAP_CONCURRENCY at a time. */
const MAP_WORKFLOW = {
  name: 'bench-map',
  steps: [
    {
      id: 'each',
      map: {
        over: 'input.items',
        step: { action: 'transform.jsonata', with: { expression: '$ * 2' } },
        concurrency: settings.mapConcurrency,
      },
    },
  ],
  output: 'steps.each.output',
};

const MAP_SCENARIO = `map of ${settings.mapItems} transform items, concurrency ${settings.mapConcurrency}`;

/** One map run, from its rows. */
interface MapRun {
  status: string;
  /** Succeeded with the output [2, 4, …]. */
  correct: boolean;
  error: unknown;
  /** The run's started_at → finished_at, ms. */
  wallMs: number;
  /** Items / (the last item's finished_at − the first item's started_at). */
  itemsPerSecond: number;
}

/**
 * Phase 5: BENCH_MAP_RUNS runs of the map workflow on one APP_ROLE=all process, each enqueued
 * (?wait=0) once the one before has ended, then timed from their rows.
 */
async function mapPhase(): Promise<Outcome> {
  const { client, databaseUrl } = await startWorking('map');
  const { id: workflowId } = await createWorkflow(client, MAP_WORKFLOW);
  const items = Array.from({ length: settings.mapItems }, (_, i) => i + 1);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const begin = performance.now();
    for (let run = 1; run <= settings.mapRuns; run++) {
      assertGoingOn();
      log(`map: run ${run} of ${settings.mapRuns} (${settings.mapItems} items, concurrency ${settings.mapConcurrency})`);
      const problem = await enqueue(client, workflowId, { input: { items } });
      if (problem) log(`map: run ${run} was not queued: ${problem}`);
      await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: workflowId }, settings.asyncTimeoutMs, assertGoingOn);
    }
    const wallSeconds = (performance.now() - begin) / 1000;
    const runs = await mapRuns(
      db,
      workflowId,
      items.map((n) => n * 2),
    );
    services.assertAlive();
    runs.forEach((r, i) =>
      log(
        `map: run ${i + 1} ${r.status}${r.correct ? '' : ` (wrong: ${brief(r.error)})`}, ${fixed(r.wallMs, 0)} ms, ${fixed(r.itemsPerSecond, 1)} items/s`,
      ),
    );
    const correct = runs.filter((r) => r.correct);
    const row: Row = {
      scenario: MAP_SCENARIO,
      count: settings.mapRuns,
      errors: settings.mapRuns - correct.length,
      ...summarize(correct.map((r) => r.wallMs)),
      throughput: summarize(correct.map((r) => r.itemsPerSecond)).p50,
      wallSeconds,
    };
    return { rows: [row] };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/** Each run of the map workflow, oldest first, from its row and its item rows. */
async function mapRuns(db: Client, workflowId: string, expected: number[]): Promise<MapRun[]> {
  const { rows } = await db.query<MapRun>(
    `SELECT r.status, COALESCE(r.status = 'succeeded' AND r.output = $2::jsonb, false) AS correct, r.error,
            (extract(epoch FROM r.finished_at - r.started_at) * 1000)::float8 AS "wallMs",
            ($3::int / nullif(extract(epoch FROM max(i.finished_at) - min(i.started_at)), 0))::float8 AS "itemsPerSecond"
       FROM workflow_runs r LEFT JOIN workflow_run_items i ON i.run_id = r.id
      WHERE r.workflow_id = $1
      GROUP BY r.id ORDER BY r.created_at`,
    [workflowId, JSON.stringify(expected), expected.length],
  );
  return rows;
}

/** One transform.jsonata step ($): {n: 5} → {n: 5}. */
const PLAIN_WORKFLOW = {
  name: 'bench-plain',
  steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }],
  output: 'steps.a.output',
};

/** One step running a run of `childId` on the run's input and taking its output. */
function parentWorkflow(childId: string): object {
  return { name: 'bench-parent', steps: [{ id: 'child', workflow: childId }], output: 'steps.child.output' };
}

const PLAIN_SCENARIO = 'plain 1-step run ?wait=30';
const PARENT_SCENARIO = 'parent with a 1-step child ?wait=30';

/**
 * Phase 6: synchronous latency at 1 client on one APP_ROLE=all process of the plain workflow
 * and of the parent of a child that is the plain workflow's twin, runs alternating between them.
 */
async function childPhase(): Promise<Outcome> {
  const { client } = await startWorking('child');
  const plain = await createWorkflow(client, PLAIN_WORKFLOW);
  const child = await createWorkflow(client, { ...PLAIN_WORKFLOW, name: 'bench-child' });
  const parent = await createWorkflow(client, parentWorkflow(child.id));
  const calls = {
    plain: () => runAndWait(client, plain.id, BENCH_WORKFLOW_INPUT),
    parent: () => runAndWait(client, parent.id, BENCH_WORKFLOW_INPUT),
  };
  try {
    log(`child: warming up with ${settings.childWarmupRuns} runs of each workflow`);
    const warmup = await runInterleaved(calls, 1, settings.childWarmupRuns, 1, interrupted.signal);
    for (const [name, result] of Object.entries(warmup)) reportErrors(`child: ${name} warm-up`, result);
    log(`child: ${settings.childRuns} runs of each workflow, 1 client, alternating`);
    const measured = await runInterleaved(calls, 1, settings.childRuns, 1, interrupted.signal);
    services.assertAlive();
    return { rows: [loadRow(PLAIN_SCENARIO, measured.plain), loadRow(PARENT_SCENARIO, measured.parent)] };
  } finally {
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 7: approvals

/** Waits for an approval, then one transform.jsonata step over the answer. */
const APPROVAL_WORKFLOW = {
  name: 'bench-approval',
  steps: [
    { id: 'approve', wait: { for: 'approval' } },
    { id: 'after', needs: ['approve'], input: 'steps.approve.output.data', action: 'transform.jsonata', with: { expression: '$' } },
  ],
  output: 'steps.after.output',
};

const APPROVAL_SCENARIO = 'approval round trip (complete → run finished)';

/**
 * Phase 7: BENCH_APPROVAL_RUNS runs of the approval workflow one after the other on one
 * APP_ROLE=all process: each is started, its wait seen in its step row, then approved; the
 * round trip is from the approval request to the run's finished_at (same machine, same clock).
 */
async function approvalPhase(): Promise<Outcome> {
  const { client, databaseUrl } = await startWorking('approval');
  const { id: workflowId } = await createWorkflow(client, APPROVAL_WORKFLOW);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const roundTrips: number[] = [];
  const errors: string[] = [];
  try {
    log(`approval: ${settings.approvalRuns} runs, each approved once it waits`);
    const begin = performance.now();
    for (let i = 0; i < settings.approvalRuns; i++) {
      assertGoingOn();
      const started = await client.request('POST', `/api/workflows/${workflowId}/run?wait=0`, { input: null });
      const runId = field(started.body, 'id') as string;
      await pollRow(db, `SELECT 1 FROM workflow_run_steps WHERE run_id = $1 AND step_id = 'approve' AND status = 'waiting'`, [runId]);
      const sentAt = Date.now();
      const res = await client.request('POST', `/api/workflows/${workflowId}/runs/${runId}/steps/approve/complete`, { data: { n: i } });
      if (res.status !== 200) errors.push(`HTTP ${res.status} ${brief(res.body)}`);
      const [finished] = await pollRow<{ status: string; output: unknown; finished: number }>(
        db,
        `SELECT status, output, (extract(epoch FROM finished_at) * 1000)::float8 AS finished FROM workflow_runs WHERE id = $1 AND finished_at IS NOT NULL`,
        [runId],
      );
      if (finished.status !== 'succeeded' || JSON.stringify(finished.output) !== JSON.stringify({ n: i }))
        errors.push(`run ${runId} ${finished.status}: ${brief(finished.output)}`);
      else roundTrips.push(finished.finished - sentAt);
    }
    const wallSeconds = (performance.now() - begin) / 1000;
    services.assertAlive();
    if (errors.length) log(`approval: ${errors.length} errors, first: ${errors[0]}`);
    const row: Row = {
      scenario: APPROVAL_SCENARIO,
      count: settings.approvalRuns,
      errors: errors.length,
      ...summarize(roundTrips),
      throughput: settings.approvalRuns / wallSeconds,
      wallSeconds,
    };
    return { rows: [row] };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/** The rows of `sql` once it has some, read every 2 ms (the measured times come from the rows, not from this). */
async function pollRow<T = unknown>(db: Client, sql: string, params: unknown[], timeoutMs = 30_000): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query(sql, params);
    if (rows.length) return rows as T[];
    if (Date.now() > deadline) throw new Error(`approval: nothing from ${sql.slice(0, 60)}… within ${timeoutMs} ms`);
    await delay(2);
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 8: live events

/** Three transform steps with a 1 s sleep between each two: transitions spread over about 2 s. */
const SSE_WORKFLOW = {
  name: 'bench-sse',
  steps: [
    { id: 'a', action: 'transform.jsonata', with: { expression: 'input.n + 1' } },
    { id: 'nap1', sleep: { seconds: 1 }, needs: ['a'] },
    { id: 'b', action: 'transform.jsonata', with: { expression: '1' }, needs: ['nap1'] },
    { id: 'nap2', sleep: { seconds: 1 }, needs: ['b'] },
    { id: 'c', action: 'transform.jsonata', with: { expression: '2' }, needs: ['nap2'] },
  ],
};

const SSE_SCENARIO = `live events, ${settings.sseStreams} open streams (finished_at → event)`;

/**
 * Phase 8: BENCH_SSE_STREAMS runs, each with a client streaming its events from the API
 * process while a worker process runs them; a run that did not end succeeded, or a stream that
 * did not end with it, counts as an error.
 */
async function ssePhase(): Promise<Outcome> {
  const databaseUrl = await databases.create('sse');
  log('sse: starting one APP_ROLE=api and one APP_ROLE=worker process');
  const [api] = await Promise.all([
    services.start('sse-api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs),
    services.start('sse-worker', serviceEnv(credentials, databaseUrl, 'worker'), settings.readyTimeoutMs),
  ]);
  const client = await loginAndInstallTransform(api, credentials);
  const { id: workflowId } = await createWorkflow(client, SSE_WORKFLOW);
  try {
    log(`sse: ${settings.sseStreams} runs, each followed by an event stream`);
    const begin = performance.now();
    const followed = await Promise.all(Array.from({ length: settings.sseStreams }, () => followRun(client, workflowId)));
    const latencies = followed.flatMap((f) => f.latencies);
    const errors = followed.filter((f) => f.error);
    for (const f of errors.slice(0, 5)) log(`sse: ${f.error}`);
    services.assertAlive();
    return {
      rows: [
        {
          scenario: SSE_SCENARIO,
          count: latencies.length,
          errors: errors.length,
          ...summarize(latencies),
          throughput: latencies.length / ((performance.now() - begin) / 1000),
          wallSeconds: (performance.now() - begin) / 1000,
        },
      ],
    };
  } finally {
    await services.stopAll();
  }
}

/** One run, started and streamed until its stream ends: the latency of each final transition's event. */
async function followRun(client: JsonClient, workflowId: string): Promise<{ latencies: number[]; error?: string }> {
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=0`, { input: { n: 1 } });
  if (res.status !== 202) return { latencies: [], error: `enqueue: HTTP ${res.status} ${brief(res.body)}` };
  const stream = await openEventStream(
    `http://127.0.0.1:${client.port}/api/workflows/${workflowId}/runs/${field(res.body, 'id') as string}/events`,
    {
      authorization: `Bearer ${client.token}`,
    },
  );
  const events = await stream.ended;
  const last = events.at(-1);
  // A run that ended before its stream opened gives only its final `state`.
  const final = last?.event === 'state' ? (last.data.run as { status?: string }) : last?.data;
  if (final?.status !== 'succeeded') return { latencies: [], error: `stream ended with ${JSON.stringify(last)}` };
  const latencies = events
    .filter((e) => e.event !== 'state' && typeof e.data.finishedAt === 'string')
    .map((e) => e.at - Date.parse(e.data.finishedAt as string));
  return { latencies };
}

// ---------------------------------------------------------------------------------------------
// Report

function printReport(outcomes: Outcome[]): void {
  const rows = outcomes.flatMap((o) => o.rows);
  const plans = outcomes.flatMap((o) => o.plans ?? []);
  const sleep = outcomes.find((o) => o.sleep)?.sleep;
  const concurrency = outcomes.find((o) => o.concurrency)?.concurrency;
  const out: string[] = ['', machineLine('Workflow benchmark'), ''];
  out.push(...formatRows(rows, 'requests/runs'));
  out.push(
    '',
    'sync row: request latency (POST run ?wait=30 until succeeded with output 13);',
    'enqueue rows: request latency, throughput = enqueue rate, wall = enqueue time;',
    'drain rows: count = runs, p50/p99/mean = per-run time (started_at → finished_at),',
    '            throughput = succeeded / (max(finished_at) − min(started_at)), wall = worker spawn → all final (incl. boot);',
    'history rows: latency per page request (GET /runs?limit=20[&cursor]), sequential, each page checked against the table;',
    'sleeping row: count = runs, errors = those not succeeded, p50/p99/mean = resume delay per run',
    "              (the after step's started_at − the sleep's due time), wall = first enqueue → all final;",
    'map row: count = runs, errors = those not succeeded with [2, 4, …], p50/p99/mean = run time (started_at → finished_at),',
    "         throughput = median items/s (items / (last item's finished_at − first item's started_at)), wall = first enqueue → last final;",
    'child rows: request latency (POST run ?wait=30 until succeeded with output {"n":5}), 1 client, the two alternating;',
    "approval row: p50/p99/mean = the run's finished_at − when its approval was sent, throughput = runs / wall (start, wait, approve, finish);",
    'live events row: count = final transitions (steps and runs), errors = runs not succeeded or streams not ended with them,',
    "                 p50/p99/mean = the event's arrival − its finished_at in the record (a worker process → a client of the API process).",
    'concurrency rows: as the drain rows, 1 worker, the same 3-step workflow without and with a limit on one key.',
    '',
    ...(notes.length ? ['History data (bulk-inserted, created 1 s apart, newest first):', ...notes, ''] : []),
    ...targetLines(rows, plans, sleep),
    ...(concurrency ? concurrencyLines(concurrency) : []),
    '',
  );
  for (const plan of plans) {
    out.push(`EXPLAIN (ANALYZE, BUFFERS) of the history query — ${plan.scale}:`, plan.text, '');
  }
  process.stdout.write(out.join('\n'));
}

function targetLines(rows: Row[], plans: Plan[], sleep: SleepCheck | undefined): string[] {
  const serial = rows.find((r) => r.scenario === 'sync run ?wait=30, 1 client, threads');
  const inline = rows.find((r) => r.scenario === 'sync run ?wait=30, 1 client, inline');
  const drains = rows.filter((r) => r.scenario.startsWith('async drain'));
  const sleeping = rows.find((r) => r.scenario === RESUME_SCENARIO);
  const map = rows.find((r) => r.scenario === MAP_SCENARIO);
  const plain = rows.find((r) => r.scenario === PLAIN_SCENARIO);
  const parent = rows.find((r) => r.scenario === PARENT_SCENARIO);
  const sse = rows.find((r) => r.scenario === SSE_SCENARIO);
  const childRatio = parent && plain ? parent.p50 / plain.p50 : NaN;
  const approval = rows.find((r) => r.scenario === APPROVAL_SCENARIO);
  return [
    ...(serial && inline
      ? [`Sandbox cost per 3-step run (about 3 evaluations), 1 client: p50 ${fixed(serial.p50 - inline.p50, 2)} ms (threads − inline)`]
      : []),
    ...(sleep ? [sleepLine(sleep)] : []),
    ...(parent && plain ? [`Child run overhead, 1 client: p50 ${fixed(parent.p50 - plain.p50, 2)} ms (parent − plain)`] : []),
    'Targets (sandboxed):',
    ...(serial
      ? [`  sync, 1 client: p50 ≤ ${TARGETS.syncP50Ms} ms → ${fixed(serial.p50, 2)} ms ${verdict(serial.p50 <= TARGETS.syncP50Ms)}`]
      : []),
    ...drains.map(
      (r) =>
        `  ${r.scenario}: ≥ ${TARGETS.asyncPerSecond} runs/s → ${fixed(r.throughput, 1)} ${verdict(r.throughput >= TARGETS.asyncPerSecond)}`,
    ),
    ...plans.map((p) => `  history plan (${p.scale}): Index Scan on ${HISTORY_INDEX}, no Sort/Seq Scan → ${verdict(p.usesIndex)}`),
    ...(sleeping
      ? [
          `  resume after sleep: p99 ≤ ${TARGETS.resumeP99Ms} ms → ${fixed(sleeping.p99, 2)} ms ` +
            verdict(sleeping.p99 <= TARGETS.resumeP99Ms),
        ]
      : []),
    ...(map
      ? [
          `  map: ≥ ${TARGETS.mapItemsPerSecond} items/s → ${fixed(map.throughput, 1)} ` +
            verdict(map.throughput >= TARGETS.mapItemsPerSecond),
        ]
      : []),
    ...(parent && plain
      ? [
          `  child run overhead: ≤ ${TARGETS.childToPlainRatio}x a plain step → ${fixed(childRatio, 2)}x ` +
            verdict(childRatio <= TARGETS.childToPlainRatio),
        ]
      : []),
    ...(approval
      ? [
          `  approval round trip: p99 ≤ ${TARGETS.approvalP99Ms} ms → ${fixed(approval.p99, 2)} ms ` +
            verdict(approval.p99 <= TARGETS.approvalP99Ms && approval.errors === 0),
        ]
      : []),
    ...(sse ? [`  live events: p99 ≤ ${TARGETS.sseP99Ms} ms → ${fixed(sse.p99, 2)} ms ${verdict(sse.p99 <= TARGETS.sseP99Ms)}`] : []),
  ];
}

/** The mid-sleep counts and the longest resume delay. */
function sleepLine(sleep: SleepCheck): string {
  const when =
    sleep.leadSeconds >= 0
      ? `mid-sleep, ${fixed(sleep.leadSeconds, 1)} s before the first run was due`
      : `once all had begun their sleep, ${fixed(-sleep.leadSeconds, 1)} s after the first run was due`;
  return (
    `Sleeping runs (${when}): ${sleep.activeJobs} workflow-run job(s) active (expected 0), ` +
    `${sleep.waiting} of ${sleep.runs} runs waiting; resume delay max ${fixed(sleep.maxDelay, 2)} ms`
  );
}

// ---------------------------------------------------------------------------------------------
// Main

// ---------------------------------------------------------------------------------------------
// Phase 9: concurrency

const UNLIMITED_SCENARIO = 'concurrency: drain without a limit, 1 worker';

/** What the limited drain showed besides its row. */
interface ConcurrencyCheck {
  limit: number;
  /** The most runs of the limited workflow in progress at once. */
  mostAtOnce: number;
  /** Limited runs/s over unlimited runs/s. */
  ratio: number;
}

/** Phase 9: the same runs drained by one worker without a limit, then limited on one key. */
async function concurrencyPhase(): Promise<Outcome> {
  const { concurrencyRuns: runs, concurrencyLimit: limit } = settings;
  const unlimited = await queuedDrain({ name: 'concurrency_free', label: 'concurrency free', workers: 1, runs });
  if (interrupted.signal.aborted) throw new Error('interrupted');
  const limited = await queuedDrain({
    name: 'concurrency_limited',
    label: 'concurrency limited',
    workers: 1,
    runs,
    // One key for every run, evaluated in the sandbox as a real key is.
    concurrency: { limit, key: '$string(input.n)' },
  });
  const ratio = limited.drainRow.throughput / unlimited.drainRow.throughput;
  return {
    rows: [
      { ...unlimited.drainRow, scenario: UNLIMITED_SCENARIO },
      { ...limited.drainRow, scenario: `concurrency: drain, limit ${limit} on one key, 1 worker` },
    ],
    concurrency: { limit, mostAtOnce: limited.mostAtOnce, ratio },
  };
}

function concurrencyLines(check: ConcurrencyCheck): string[] {
  return [
    `  limited drain (limit ${check.limit} on one key) / unlimited drain: ≥ ${TARGETS.limitedToUnlimitedRatio * 100} % → ` +
      `${fixed(check.ratio * 100, 1)} % ${verdict(check.ratio >= TARGETS.limitedToUnlimitedRatio)}`,
    `  limit never exceeded: most runs in progress at once ${check.mostAtOnce} ≤ ${check.limit} ${verdict(check.mostAtOnce <= check.limit)}`,
  ];
}

const cleanup = cleanupOnce(services, databases);

const PHASE_RUNS: Record<Phase, () => Promise<Outcome>> = {
  sync: async () => ({ rows: await syncPhase() }),
  async: async () => {
    const rows = await asyncPhase(1);
    if (interrupted.signal.aborted) throw new Error('interrupted');
    return { rows: [...rows, ...(await asyncPhase(2))] };
  },
  history: historyPhase,
  sleep: sleepPhase,
  map: mapPhase,
  child: childPhase,
  approval: approvalPhase,
  sse: ssePhase,
  concurrency: concurrencyPhase,
};

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const outcomes: Outcome[] = [];
  for (const phase of settings.phases) {
    if (interrupted.signal.aborted) throw new Error('interrupted');
    outcomes.push(await PHASE_RUNS[phase]());
  }
  printReport(outcomes);
  const errors = outcomes.flatMap((o) => o.rows).reduce((sum, r) => sum + r.errors, 0);
  if (errors) throw new Error(`${errors} request(s)/run(s) failed; see above`);
});
