/**
 * Workflow trigger benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL
 * database per phase, starting runs of the 3-step transform.jsonata workflow of bench/support.ts
 * (offline, a few ms a run) in the two ways that need no API caller:
 *
 *   1. inbound webhooks: one APP_ROLE=api process (which answers the hooks) and one
 *      APP_ROLE=worker process (which runs what they start, meanwhile); one trigger, scheme
 *      standard-webhooks, responseMode async, dedupe on webhook-id, mapping `{ "n": body.n }` from
 *      a GitHub-push-like body of about 1 KB. BENCH_HOOK_CLIENTS closed-loop clients POST
 *      /api/hooks/:id, each request with a fresh webhook-id and signed with the `standardwebhooks`
 *      package, first BENCH_HOOK_WARMUP_SECONDS unmeasured, then BENCH_HOOK_SECONDS measured:
 *      accepted (202) requests/s, latency to the 202 (p50/p99) and every other answer by status.
 *      Before the load, one request signed with another secret must get 401 (so the service
 *      checks the signature). After it, every run of the workflow must be one that a 202 named
 *      (runs created = 202 answers), carry triggeredBy webhook with the trigger's id, and finish
 *      with output 13.
 *   2. schedules: BENCH_SCHEDULES schedules `* * * * *` (UTC), BENCH_SCHEDULES_PER_WORKFLOW to a
 *      workflow (1: one schedule on each of 100 workflows, the way separate jobs are set up; at
 *      most 20, the limit per workflow), one APP_ROLE=api process (the API) and one
 *      APP_ROLE=worker process (which fires schedules). For BENCH_SCHEDULE_MINUTES consecutive
 *      minutes that every schedule has as an occurrence (the first is the latest first
 *      nextFireAt), the fire delay of each run from the row: createdAt − scheduledFor (claimed, run
 *      created) and startedAt − scheduledFor (a worker took it up), p50/p99, and the
 *      occurrences recorded by outcome.
 *
 * Rate limits during the inbound phase: they stay ON, as in production (the hook's per-source,
 * per-trigger and tier limits are all counted), and are raised out of the way, not switched off:
 * HOOK_RATE_LIMIT_PER_SOURCE and HOOK_RATE_LIMIT_PER_TRIGGER are set to 1,000,000 a minute (every
 * client is 127.0.0.1 and every request goes to one trigger), and since the tier limit would
 * throttle too (enterprise allows 2,000 a minute by default, the load is about 24,000), a
 * throwaway enterprise license lets the organization set its own, 1,000,000 a minute (PATCH
 * /api/subscription). BENCH_HOOK_LIMITS=off runs with RATE_LIMIT_ENABLED=false instead (no
 * license, nothing counted). The schedules phase makes about 200 API calls and runs with
 * RATE_LIMIT_ENABLED=false (as the other benchmarks do): limits play no part in firing.
 *
 * On the 2-core machine the load generator (signing included), both service processes and
 * PostgreSQL share the cores.
 *
 * Run with `npm run bench:triggers`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per phase is created on it and dropped at the end
 *   BENCH_HOOK_CLIENTS               concurrent hook clients (20)
 *   BENCH_HOOK_SECONDS               measured load (20)
 *   BENCH_HOOK_WARMUP_SECONDS        load before it, not measured (5)
 *   BENCH_HOOK_LIMITS                on (default, limits raised) or off (RATE_LIMIT_ENABLED=false)
 *   BENCH_SCHEDULES                  schedules (100)
 *   BENCH_SCHEDULES_PER_WORKFLOW     schedules on each workflow (1; at most 20)
 *   BENCH_SCHEDULE_MINUTES           minutes measured (2)
 *   BENCH_TRIGGER_PHASES             inbound,schedules (default) or inbound
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for the worker to finish the hooks' runs (600)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE passed through to the service processes
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { RATE_LIMIT_WINDOW_SECONDS } from '../src/modules/licensing/domain/tiers';
import {
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
  BENCH_WORKFLOW_OUTPUT,
  brief,
  cleanupOnce,
  createWorkflow,
  field,
  fixed,
  formatRows,
  intFromEnv,
  JsonClient,
  JsonResponse,
  loadRow,
  log,
  loginAndInstallTransform,
  machineLine,
  raiseRateLimit,
  randomCredentials,
  reportErrors,
  Row,
  runBenchmark,
  runLoad,
  ScratchDatabases,
  serviceEnv,
  Services,
  summarize,
  throwawayLicense,
  unexpected,
  verdict,
  waitForDrain,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  hookClients: intFromEnv('BENCH_HOOK_CLIENTS', 20),
  hookMs: intFromEnv('BENCH_HOOK_SECONDS', 20) * 1000,
  hookWarmupMs: intFromEnv('BENCH_HOOK_WARMUP_SECONDS', 5) * 1000,
  hookLimits: limitsFromEnv(),
  schedules: intFromEnv('BENCH_SCHEDULES', 100),
  schedulesPerWorkflow: intFromEnv('BENCH_SCHEDULES_PER_WORKFLOW', 1),
  scheduleMinutes: intFromEnv('BENCH_SCHEDULE_MINUTES', 2),
  /** BENCH_TRIGGER_PHASES=inbound leaves the schedules out (the inbound phase always runs). */
  schedulesPhase: (process.env.BENCH_TRIGGER_PHASES || 'inbound,schedules').split(',').includes('schedules'),
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 600) * 1000,
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

function limitsFromEnv(): boolean {
  const raw = process.env.BENCH_HOOK_LIMITS || 'on';
  if (raw !== 'on' && raw !== 'off') throw new Error(`BENCH_HOOK_LIMITS must be on or off, got '${raw}'`);
  return raw === 'on';
}

const TARGETS = { acceptedPerSecond: 400, acceptedP99Ms: 50, fireDelayP99Ms: 5000 };

/** Requests a minute for the organization and for the hook's own limits: far above what a run sends. */
const BUDGET = 1_000_000;
const EXPECTED_POLICY = `"enterprise";q=${BUDGET};w=${RATE_LIMIT_WINDOW_SECONDS}`;

/** The trigger: the contract's defaults but for the mapping (async answers, dedupe on webhook-id). */
const TRIGGER = { name: 'bench', scheme: 'standard-webhooks', mapping: '{ "n": body.n }', responseMode: 'async' };

const credentials = randomCredentials();

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_tr_${Date.now()}`);

const alive = () => {
  services.assertAlive();
  if (interrupted.signal.aborted) throw new Error('interrupted');
};

// ---------------------------------------------------------------------------------------------
// Phase 1: inbound webhooks

/** What the sender of the hooks keeps: the answers it got. */
interface Sender {
  /** The run of every 202, by run id. */
  runIds: Set<string>;
  /** Every answer that was not a valid 202, by status (0: no answer). */
  refused: Map<number, number>;
  /** 202 answers, warm-up included. */
  accepted: number;
  /** Requests sent. */
  sent: number;
}

/** A push as GitHub would describe it, about 1 KB; `n` is what the mapping takes. */
function pushBody(sequence: number): string {
  const commit = (i: number) => ({
    id: randomBytes(20).toString('hex'),
    message: `Commit ${i} of push ${sequence}: adjust the retry schedule of outbound deliveries`,
    timestamp: new Date().toISOString(),
    author: { name: 'Bench Sender', email: 'bench@example.com', username: 'bench' },
    added: [],
    removed: [],
    modified: [`src/module-${i}.ts`],
  });
  return JSON.stringify({
    n: BENCH_WORKFLOW_INPUT.n,
    sequence,
    ref: 'refs/heads/main',
    before: randomBytes(20).toString('hex'),
    after: randomBytes(20).toString('hex'),
    repository: { id: 4242, name: 'platform', full_name: 'bench/platform', private: true, default_branch: 'main' },
    pusher: { name: 'bench', email: 'bench@example.com' },
    commits: [commit(1), commit(2)],
  });
}

/** A push signed the standard-webhooks way, with a fresh webhook-id (so no two are duplicates). */
function signed(signer: Webhook, sequence: number): { body: string; headers: Record<string, string> } {
  const id = `msg_${randomUUID()}`;
  const now = new Date();
  const body = pushBody(sequence);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signer.sign(id, now, body),
    },
  };
}

/** POSTs one signed push to the hook; the answer is tallied in `sender` (a well-formed 202 as accepted) and returned. */
async function deliver(hook: JsonClient, path: string, signer: Webhook, workflowId: string, sender: Sender): Promise<JsonResponse> {
  let res: JsonResponse;
  try {
    res = await hook.send('POST', path, signed(signer, ++sender.sent));
  } catch (error) {
    sender.refused.set(0, (sender.refused.get(0) ?? 0) + 1);
    throw error;
  }
  if (hookProblem(res, workflowId)) {
    sender.refused.set(res.status, (sender.refused.get(res.status) ?? 0) + 1);
  } else {
    sender.accepted++;
    sender.runIds.add(field(res.body, 'runId') as string);
  }
  return res;
}

/** null for a 202 `{eventId, runId, status: queued, duplicate: false}` whose Location is the run. */
function hookProblem(res: JsonResponse, workflowId: string): string | null {
  if (res.status !== 202) return `HTTP ${res.status} ${brief(res.body)}`;
  const runId = field(res.body, 'runId');
  if (
    typeof runId !== 'string' ||
    typeof field(res.body, 'eventId') !== 'string' ||
    field(res.body, 'status') !== 'queued' ||
    field(res.body, 'duplicate') !== false
  )
    return `202 but ${brief(res.body)}`;
  const location = `/api/workflows/${workflowId}/runs/${runId}`;
  if (res.headers.location !== location) return `202 with Location ${String(res.headers.location)}, expected ${location}`;
  return null;
}

interface InboundResult {
  /** Without a worker (runs queued), then with one running them. */
  rows: [Row, Row];
  /** Worker start → the first measure's runs all final, s. */
  backlogSeconds: number;
  sender: Sender;
  /** RateLimit-Policy of the first accepted hook (limits on). */
  policy: string | undefined;
  runs: number;
  /** Runs with triggeredBy {type: webhook, id: the trigger, eventId}. */
  webhookRuns: number;
  succeeded: number;
  /** Answered run ids without a row, and rows no 202 named. */
  unknownAnswered: number;
  unanswered: number;
  /** Load end → every run final, s. */
  drainSeconds: number;
}

async function inboundPhase(): Promise<InboundResult> {
  const databaseUrl = await databases.create('hooks');
  const license = settings.hookLimits ? await throwawayLicense('enterprise', BUDGET) : {};
  const env = (role: 'api' | 'worker') => ({
    ...serviceEnv(credentials, databaseUrl, role),
    ...license,
    ...(settings.hookLimits
      ? { RATE_LIMIT_ENABLED: 'true', HOOK_RATE_LIMIT_PER_SOURCE: String(BUDGET), HOOK_RATE_LIMIT_PER_TRIGGER: String(BUDGET) }
      : {}),
  });
  log('hooks: starting one APP_ROLE=api process (the worker comes after the first measure)');
  const api = await services.start('api', env('api'), settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(api, credentials);
  if (settings.hookLimits) await raiseRateLimit(client, BUDGET);
  const { id: workflowId } = await createWorkflow(client, BENCH_WORKFLOW);

  const created = await client.request('POST', `/api/workflows/${workflowId}/triggers`, TRIGGER);
  const triggerId = field(created.body, 'id');
  const secret = field(created.body, 'secret');
  if (created.status !== 201 || typeof triggerId !== 'string' || typeof secret !== 'string')
    throw unexpected('trigger creation', created.status, created.body);
  const path = `/api/hooks/${triggerId}`;
  const url = field(created.body, 'url');
  if (typeof url !== 'string' || !url.endsWith(path))
    throw unexpected(`trigger creation (url ending ${path})`, created.status, created.body);

  // The hook is public: no bearer token on its requests.
  const hook = new JsonClient(api.port);
  const signer = new Webhook(secret);
  const sender: Sender = { runIds: new Set(), refused: new Map(), accepted: 0, sent: 0 };

  // The service must check the signature: one signed with another secret is refused (and starts nothing).
  const forged = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
  const probe = await deliver(hook, path, forged, workflowId, { runIds: new Set(), refused: new Map(), accepted: 0, sent: 0 });
  if (probe.status !== 401) throw unexpected('a hook signed with another secret (401 expected)', probe.status, probe.body);
  const first = await deliver(hook, path, signer, workflowId, sender);
  const firstProblem = hookProblem(first, workflowId);
  if (firstProblem) throw new Error(`the first signed hook: ${firstProblem}`);
  const policy = first.headers['ratelimit-policy'] as string | undefined;
  if (settings.hookLimits && policy !== EXPECTED_POLICY)
    log(`hooks: RateLimit-Policy on the hook's 202 is ${policy === undefined ? 'missing' : `'${policy}'`}, expected '${EXPECTED_POLICY}'`);

  const call = async () => hookProblem(await deliver(hook, path, signer, workflowId, sender), workflowId);
  log(`hooks: warming up for ${settings.hookWarmupMs / 1000} s, ${settings.hookClients} clients`);
  const warmup = await runLoad(settings.hookClients, Infinity, call, during(settings.hookWarmupMs));
  reportErrors('hooks: warm-up', warmup);
  alive();
  sender.refused.clear();
  const measure = async (what: string) => {
    log(`hooks: measuring for ${settings.hookMs / 1000} s, ${settings.hookClients} clients, ${what}`);
    const measured = await runLoad(settings.hookClients, Infinity, call, during(settings.hookMs));
    alive();
    return loadRow(`POST /api/hooks/:id, ${settings.hookClients} clients, ${settings.hookMs / 1000} s, ${what}`, measured);
  };
  // Taking requests in (a run recorded and queued at each 202) alone, then with a worker
  // running the runs on the same two cores.
  const ingest = await measure('runs queued (no worker yet)');
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log('hooks: starting one APP_ROLE=worker process and waiting for it to finish the runs');
    await services.start('worker', env('worker'), settings.readyTimeoutMs);
    const drainStart = performance.now();
    await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: workflowId }, settings.asyncTimeoutMs, alive);
    const backlogSeconds = (performance.now() - drainStart) / 1000;
    sender.refused.clear();
    const withWorker = await measure('worker running the runs');
    const loadEnd = performance.now();
    log('hooks: waiting for the worker to finish the runs');
    await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: workflowId }, settings.asyncTimeoutMs, alive);
    const drainSeconds = (performance.now() - loadEnd) / 1000;
    const { rows } = await db.query<{ id: string; webhook: boolean; ok: boolean }>(
      `SELECT id,
              (triggered_by->>'type' = 'webhook' AND triggered_by->>'id' = $2 AND triggered_by->>'eventId' IS NOT NULL) AS webhook,
              (status = 'succeeded' AND output = $3::jsonb) AS ok
         FROM workflow_runs WHERE workflow_id = $1`,
      [workflowId, triggerId, JSON.stringify(BENCH_WORKFLOW_OUTPUT)],
    );
    const ids = new Set(rows.map((r) => r.id));
    return {
      rows: [ingest, withWorker],
      backlogSeconds,
      sender,
      policy,
      runs: rows.length,
      webhookRuns: rows.filter((r) => r.webhook).length,
      succeeded: rows.filter((r) => r.ok).length,
      unknownAnswered: [...sender.runIds].filter((id) => !ids.has(id)).length,
      unanswered: rows.filter((r) => !sender.runIds.has(r.id)).length,
      drainSeconds,
    };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/** Aborts after `ms`, or on SIGINT. */
function during(ms: number): AbortSignal {
  return AbortSignal.any([interrupted.signal, AbortSignal.timeout(ms)]);
}

// ---------------------------------------------------------------------------------------------
// Phase 2: schedules

interface MinuteResult {
  scheduledFor: Date;
  outcomes: Record<string, number>;
  created: Row;
  started: Row;
}

async function schedulesPhase(): Promise<MinuteResult[]> {
  const perWorkflow = settings.schedulesPerWorkflow;
  if (perWorkflow > 20) throw new Error('BENCH_SCHEDULES_PER_WORKFLOW must be at most 20 (the limit per workflow)');
  const databaseUrl = await databases.create('schedules');
  log('schedules: starting one APP_ROLE=api and one APP_ROLE=worker process');
  const api = await services.start('api', serviceEnv(credentials, databaseUrl, 'api'), settings.readyTimeoutMs);
  await services.start('worker', serviceEnv(credentials, databaseUrl, 'worker'), settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(api, credentials);

  const workflows = Math.ceil(settings.schedules / perWorkflow);
  log(`schedules: creating ${settings.schedules} schedules '* * * * *' on ${workflows} workflow(s)`);
  const firstFires: number[] = [];
  for (let w = 0; w < workflows; w++) {
    alive();
    const { id } = await createWorkflow(client, { ...BENCH_WORKFLOW, name: `bench-${w + 1}` });
    for (let s = 0; s < perWorkflow && w * perWorkflow + s < settings.schedules; s++) {
      const res = await client.request('POST', `/api/workflows/${id}/schedules`, {
        cron: '* * * * *',
        timezone: 'UTC',
        input: BENCH_WORKFLOW_INPUT,
      });
      const next = field(res.body, 'nextFireAt');
      if (res.status !== 201 || typeof next !== 'string') throw unexpected('schedule creation', res.status, res.body);
      firstFires.push(Date.parse(next));
    }
  }

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    // The first minute that is an occurrence of every schedule.
    const first = Math.max(...firstFires);
    const results: MinuteResult[] = [];
    for (let m = 0; m < settings.scheduleMinutes; m++) {
      const scheduledFor = new Date(first + m * 60_000);
      log(`schedules: waiting for the occurrence ${scheduledFor.toISOString()}`);
      results.push(await measureMinute(db, scheduledFor, m + 1));
    }
    return results;
  } finally {
    await db.end();
    await services.stopAll();
  }
}

interface FiredRun {
  status: string;
  createdMs: number;
  startedMs: number | null;
}

/** The occurrences recorded for `scheduledFor` by outcome, and the runs started for it. */
async function readMinute(db: Client, scheduledFor: Date): Promise<{ outcomes: Record<string, number>; runs: FiredRun[] }> {
  const recorded = await db.query<{ outcome: string; count: number }>(
    'SELECT outcome, count(*)::int AS count FROM workflow_schedule_occurrences WHERE scheduled_for = $1 GROUP BY outcome',
    [scheduledFor],
  );
  const fired = await db.query<FiredRun>(
    `SELECT status,
            extract(epoch FROM created_at - $1::timestamptz)::float8 * 1000 AS "createdMs",
            extract(epoch FROM started_at - $1::timestamptz)::float8 * 1000 AS "startedMs"
       FROM workflow_runs
      WHERE triggered_by->>'type' = 'schedule' AND (triggered_by->>'scheduledFor')::timestamptz = $1`,
    [scheduledFor],
  );
  return { outcomes: Object.fromEntries(recorded.rows.map((r) => [r.outcome, r.count])), runs: fired.rows };
}

const FINAL = ['succeeded', 'failed', 'canceled', 'timed_out'];

/**
 * Waits (at most until 50 s past the minute) for every schedule to record the occurrence and for
 * the runs it started to be final; then the delays from the rows.
 */
async function measureMinute(db: Client, scheduledFor: Date, minute: number): Promise<MinuteResult> {
  const deadline = scheduledFor.getTime() + 50_000;
  // Idle until a second before the minute: the figures are read from the rows afterwards.
  while (Date.now() < scheduledFor.getTime() - 1000) {
    alive();
    await sleep(Math.min(1000, scheduledFor.getTime() - 1000 - Date.now()));
  }
  let state = await readMinute(db, scheduledFor);
  for (;;) {
    const recorded = Object.values(state.outcomes).reduce((sum, n) => sum + n, 0);
    const final = state.runs.filter((r) => FINAL.includes(r.status)).length;
    if (recorded >= settings.schedules && final === state.runs.length && final === (state.outcomes.started ?? 0)) break;
    if (Date.now() > deadline) {
      log(`schedules: minute ${minute}: 50 s past it, ${recorded} occurrences recorded, ${final} of ${state.runs.length} runs final`);
      break;
    }
    await sleep(500);
    alive();
    state = await readMinute(db, scheduledFor);
  }
  const { outcomes, runs } = state;
  const succeeded = runs.filter((r) => r.status === 'succeeded').length;
  const label = `minute ${minute} (${scheduledFor.toISOString().slice(11, 16)} UTC)`;
  const row = (what: string, delays: number[]): Row => {
    const spread = delays.length > 1 ? (Math.max(...delays) - Math.min(...delays)) / 1000 : NaN;
    return {
      scenario: `${label}: ${what}`,
      count: runs.length,
      errors: settings.schedules - succeeded,
      ...summarize(delays),
      throughput: delays.length / spread,
      wallSeconds: delays.length ? Math.max(...delays) / 1000 : NaN,
    };
  };
  return {
    scheduledFor,
    outcomes,
    created: row(
      'created − scheduledFor',
      runs.map((r) => r.createdMs),
    ),
    started: row(
      'started − scheduledFor',
      runs.flatMap((r) => (r.startedMs === null ? [] : [r.startedMs])),
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Report

function printReport(inbound: InboundResult, minutes: MinuteResult[]): void {
  const { rows, sender } = inbound;
  const [row, withWorker] = rows;
  const refused = [...sender.refused].map(([status, count]) => `${status === 0 ? 'no answer' : status}: ${count}`).join(', ');
  const limits = settings.hookLimits
    ? `limits on, raised to ${BUDGET.toLocaleString('en')}/min (tier, per source, per trigger)`
    : 'RATE_LIMIT_ENABLED=false';
  const worst = (key: 'created' | 'started') => Math.max(...minutes.map((m) => m[key].p99));
  const startedP99 = worst('started');
  const out: string[] = ['', machineLine('Workflow trigger benchmark'), ''];
  out.push(
    `Inbound webhooks: standard-webhooks, async, mapping ${TRIGGER.mapping}, ~1 KB body; 1 api process, then 1 worker process too; ${limits}`,
    ...formatRows(rows, 'requests', { throughput: 'accepted/s' }),
    '',
    'p50/p99/mean: latency of the 202 answers; accepted/s = 202s / measured time; errors = every other answer.',
    `  non-202 answers while measured with the worker: ${refused || 'none'}`,
    `  the worker, started after the first measure, ran its ${fixed(rows[0].count, 0)}+ queued runs in ${fixed(inbound.backlogSeconds, 1)} s`,
    `  RateLimit-Policy on the hook's 202: ${inbound.policy ?? '(none)'}`,
    `  runs of the workflow: ${inbound.runs}, 202 answers (probe and warm-up included): ${sender.accepted} ` +
      `→ ${inbound.runs === sender.accepted && !inbound.unknownAnswered && !inbound.unanswered ? 'equal' : 'DIFFERENT'}` +
      (inbound.unknownAnswered || inbound.unanswered
        ? ` (${inbound.unknownAnswered} answered run id(s) without a row, ${inbound.unanswered} row(s) no 202 named)`
        : ''),
    `  with triggeredBy webhook of the trigger: ${inbound.webhookRuns}; succeeded with output ${BENCH_WORKFLOW_OUTPUT}: ${inbound.succeeded}; ` +
      `all final ${fixed(inbound.drainSeconds, 1)} s after the load ended`,
    '',
    `Schedules: ${settings.schedules} schedules '* * * * *' (UTC) on ${Math.ceil(settings.schedules / settings.schedulesPerWorkflow)} ` +
      `workflow(s); 1 api + 1 worker process (WORKER_CONCURRENCY run slots; the scheduler ticks every second)`,
    ...formatRows(
      minutes.flatMap((m) => [m.created, m.started]),
      'runs',
      { throughput: 'runs/s' },
    ),
    '',
    'p50/p99/mean: delay of each run of the occurrence from scheduledFor, from the rows (created_at, started_at);',
    'runs/s = runs / (last − first); wall = the largest delay; errors = schedules without a succeeded run.',
    ...minutes.map(
      (m) =>
        `  ${m.scheduledFor.toISOString()}: occurrences ${
          Object.entries(m.outcomes)
            .map(([outcome, count]) => `${outcome} ${count}`)
            .join(', ') || 'none recorded'
        }`,
    ),
    '',
    'Targets:',
    `  accepted requests/s ≥ ${TARGETS.acceptedPerSecond} → ${fixed(row.throughput, 1)} ${verdict(row.throughput >= TARGETS.acceptedPerSecond)}` +
      ` (with the worker on the same cores: ${fixed(withWorker.throughput, 1)})`,
    `  p99 to the 202 ≤ ${TARGETS.acceptedP99Ms} ms → ${fixed(row.p99, 1)} ms ${verdict(row.p99 <= TARGETS.acceptedP99Ms)}` +
      ` (with the worker: ${fixed(withWorker.p99, 1)} ms)`,
    `  fire delay (started − scheduledFor) p99 ≤ ${TARGETS.fireDelayP99Ms / 1000} s → ` +
      `${minutes.map((m) => `${fixed(m.started.p99 / 1000, 2)} s`).join(', ')} ${verdict(startedP99 <= TARGETS.fireDelayP99Ms)}`,
    `  (created − scheduledFor p99: ${minutes.map((m) => `${fixed(m.created.p99 / 1000, 2)} s`).join(', ')})`,
    '',
  );
  process.stdout.write(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases);

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const inbound = await inboundPhase();
  if (interrupted.signal.aborted) throw new Error('interrupted');
  const minutes = settings.schedulesPhase ? await schedulesPhase() : [];
  printReport(inbound, minutes);
  const problems = [
    ...inbound.rows.map((r) => (r.errors ? `${r.errors} hook request(s) not answered 202 (${r.scenario})` : '')),
    inbound.runs !== inbound.sender.accepted || inbound.unknownAnswered || inbound.unanswered ? 'runs created ≠ 202 answers' : '',
    inbound.succeeded !== inbound.runs ? `${inbound.runs - inbound.succeeded} hook run(s) did not succeed with the expected output` : '',
    ...minutes.map((m) =>
      m.started.errors ? `${m.scheduledFor.toISOString()}: ${m.started.errors} schedule(s) without a succeeded run` : '',
    ),
  ].filter(Boolean);
  if (problems.length) throw new Error(`${problems.join('; ')}; see above`);
});
