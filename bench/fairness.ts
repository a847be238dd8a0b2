/**
 * Fair shares benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL
 * database per phase, with two organizations: A (the bootstrap organization) floods one shared
 * resource while B (a second organization, created through POST /api/organizations by the
 * bootstrap operator) makes its ordinary, single requests. For each resource, B's latency is
 * measured alone and while A floods, and A's throughput alone and while B does its requests:
 *
 *   1. sync execute (one APP_ROLE=all process): B's POST /api/agents/:id/execute?wait=30 of a
 *      transform.jsonata agent with a trivial expression, BENCH_SYNC_REQUESTS one after another,
 *      while BENCH_FLOOD_CLIENTS closed-loop clients of A POST /api/hooks/:id to a bearer trigger
 *      whose mapping is slow (`$count($sort([1..BENCH_FLOOD_SORT]))`, tens of ms in the
 *      expression sandbox), each starting an async run of a 3-step workflow. A's figure:
 *      accepted hooks/s alone (BENCH_FLOOD_SECONDS in all) and while B's requests run, taken in
 *      4 turns of each within the one flood; B's turn lasts as long as A's alone (B makes at
 *      least BENCH_SYNC_REQUESTS / 4 requests in each, more if they take less time).
 *   2. async queue wait (one APP_ROLE=api and one APP_ROLE=worker process): B's single
 *      executions (?wait=0), BENCH_QUEUE_SAMPLES of them, each one's queue wait from its row
 *      (started_at − created_at), while A has BENCH_QUEUE_FLOOD executions queued (submitted
 *      first, ?wait=0, BENCH_ENQUEUE_CLIENTS clients, while the worker process is stopped, so
 *      that they are all waiting when it starts again). B's singles begin once the worker is
 *      ready, spread over 80 % of the time A's backlog took to drain alone. A's figure:
 *      executions/s from its rows (succeeded / (last finish − first start)), alone and with B's
 *      singles.
 *   3. webhook delivery (api + worker processes, OUTBOUND_ALLOWLIST=127.0.0.1): B's test events
 *      (POST /api/webhooks/:id/test), BENCH_DELIVERY_SAMPLES of them, each one's latency from the
 *      request to the receipt by B's receiver (loopback, answers at once): alone one after
 *      another, flooded one every (BENCH_DELIVERY_SECONDS − 3 s) / samples from 1 s into A's
 *      stream, whether the ones before were answered or not (each is listed by when it was
 *      sent, to show when in the flood B waited). Meanwhile A has
 *      BENCH_DELIVERY_ENDPOINTS endpoints whose receivers answer after BENCH_SLOW_RECEIVER_SECONDS
 *      (longer than the 15 s delivery timeout) and a stream of BENCH_DELIVERY_EVENTS_PER_SECOND
 *      events (A's executions, ?wait=0; each event is one message to every one of A's
 *      endpoints) for BENCH_DELIVERY_SECONDS. Every endpoint has a port of its own (the service
 *      pools connections per host and port: B's must not share A's pool). A's figure: delivery
 *      requests its receivers got per second over the stream. A alone runs on processes and a
 *      database of its own (its endpoints' windows fresh, nothing of the first stream left).
 *   4. schedule fire delay (api + worker processes): B has BENCH_SCHEDULES_B schedules
 *      `* * * * *` (UTC), A BENCH_SCHEDULES_A (20 per workflow, within its tier's quota); the
 *      delay of each run from the row (started_at − scheduledFor) at three consecutive minutes:
 *      B alone (A's schedules are created after it), A and B, then A alone (B's paused). A's
 *      figure: its runs started per second since the minute (runs / the last start's delay).
 *      Each workflow runs once (through the API) before its schedules first fire, so no
 *      minute is the first the worker sees of them. The phase waits for a minute boundary,
 *      then takes three minutes.
 *
 * The targets: B's p99 while A floods ≤ 2 × B's p99 alone, for each resource; A's throughput
 * while B makes its requests ≥ 80 % of A's alone. Each is printed PASS or MISS; a miss does not
 * fail the run (it is a measurement; B's requests failing under a flood count as a MISS, B's
 * requests failing alone mean the run is broken and it fails).
 *
 * Both organizations have the tier of a throwaway license (BENCH_FAIRNESS_TIER, enterprise by
 * default: 75 % of a worker's job slots for each, the schedules quota 5000; team: 50 %, 500).
 * Rate limits are off (RATE_LIMIT_ENABLED=false), as in the other benchmarks: they are not
 * what is measured. The sandbox has its default threads (cores + 1, unless EXPRESSION_THREADS)
 * and each organization at most the cores less one (unless ORG_MAX_EXPRESSIONS, up to one fewer
 * than the threads). On the 2-core machine the load generator, the service processes and
 * PostgreSQL share the cores.
 *
 * Run with `npm run bench:fairness`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per phase is created on it and dropped at the end
 *   BENCH_FAIRNESS_PHASES            phases to run, comma-separated (sync,queue,deliveries,schedules)
 *   BENCH_FAIRNESS_TIER              tier of the license and of both organizations: team or enterprise (enterprise)
 *   BENCH_SYNC_REQUESTS              B's sync executions measured, one at a time, alone and flooded (200)
 *   BENCH_SYNC_WARMUP                B's sync executions before them, not measured (20)
 *   BENCH_FLOOD_CLIENTS              A's concurrent hook clients (30)
 *   BENCH_FLOOD_SORT                 N in A's mapping `$count($sort([1..N]))` (5000, tens of ms an evaluation)
 *   BENCH_FLOOD_WARMUP_SECONDS       A's flood before anything is measured (5)
 *   BENCH_FLOOD_SECONDS              A's flood measured alone, in all (20)
 *   BENCH_QUEUE_FLOOD                A's executions queued (2000)
 *   BENCH_QUEUE_SAMPLES              B's single executions, alone and flooded (20)
 *   BENCH_ENQUEUE_CLIENTS            concurrent clients submitting A's executions (50)
 *   BENCH_DELIVERY_ENDPOINTS         A's endpoints, on slow receivers (18)
 *   BENCH_DELIVERY_EVENTS_PER_SECOND A's events a second (2)
 *   BENCH_DELIVERY_SECONDS           A's stream of events (30)
 *   BENCH_DELIVERY_SAMPLES           B's test events, alone and flooded (20)
 *   BENCH_SLOW_RECEIVER_SECONDS      how long A's receivers take to answer (20)
 *   BENCH_SCHEDULES_A                A's schedules (400)
 *   BENCH_SCHEDULES_B                B's schedules (5)
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for executions or deliveries to finish (300)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE, EXPRESSION_THREADS, ORG_MAX_*
 *                                    passed through to the service processes
 */
import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { isTier, Tier } from '../src/modules/licensing/domain/tiers';
import { SCHEDULE_LIMITS } from '../src/modules/triggers/domain/schedule';
import {
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
  brief,
  cleanupOnce,
  createWorkflow,
  drainFigures,
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
  runBenchmark,
  runLoad,
  ScratchDatabases,
  serviceEnv,
  Services,
  summarize,
  throwawayLicense,
  unexpected,
  waitForDrain,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const PHASES = ['sync', 'queue', 'deliveries', 'schedules'] as const;
type Phase = (typeof PHASES)[number];

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  phases: phasesFromEnv(),
  tier: tierFromEnv(),
  syncRequests: intFromEnv('BENCH_SYNC_REQUESTS', 200),
  syncWarmup: intFromEnv('BENCH_SYNC_WARMUP', 20),
  floodClients: intFromEnv('BENCH_FLOOD_CLIENTS', 30),
  floodSort: intFromEnv('BENCH_FLOOD_SORT', 5000),
  floodWarmupMs: intFromEnv('BENCH_FLOOD_WARMUP_SECONDS', 5) * 1000,
  floodMs: intFromEnv('BENCH_FLOOD_SECONDS', 20) * 1000,
  queueFlood: intFromEnv('BENCH_QUEUE_FLOOD', 2000),
  queueSamples: intFromEnv('BENCH_QUEUE_SAMPLES', 20),
  enqueueClients: intFromEnv('BENCH_ENQUEUE_CLIENTS', 50),
  deliveryEndpoints: intFromEnv('BENCH_DELIVERY_ENDPOINTS', 18),
  deliveryEventsPerSecond: intFromEnv('BENCH_DELIVERY_EVENTS_PER_SECOND', 2),
  deliveryMs: intFromEnv('BENCH_DELIVERY_SECONDS', 30) * 1000,
  deliverySamples: intFromEnv('BENCH_DELIVERY_SAMPLES', 20),
  slowReceiverMs: intFromEnv('BENCH_SLOW_RECEIVER_SECONDS', 20) * 1000,
  schedulesA: intFromEnv('BENCH_SCHEDULES_A', 400),
  schedulesB: intFromEnv('BENCH_SCHEDULES_B', 5),
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 300) * 1000,
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

function phasesFromEnv(): Phase[] {
  const raw = (process.env.BENCH_FAIRNESS_PHASES || PHASES.join(',')).split(',').map((p) => p.trim());
  const unknown = raw.filter((p) => !PHASES.includes(p as Phase));
  if (unknown.length) throw new Error(`BENCH_FAIRNESS_PHASES: unknown phase(s) ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  return PHASES.filter((p) => raw.includes(p));
}

function tierFromEnv(): Tier {
  const raw = process.env.BENCH_FAIRNESS_TIER || 'enterprise';
  // Webhooks need the team tier; A's 400 schedules fit the team quota (500) too.
  if (!isTier(raw) || raw === 'starter') throw new Error(`BENCH_FAIRNESS_TIER must be team or enterprise, got '${raw}'`);
  return raw;
}

/** B's p99 flooded at most this many times its p99 alone. */
const LATENCY_FACTOR = 2;
/** A's throughput with B's requests at least this share of its throughput alone. */
const THROUGHPUT_SHARE = 0.8;

/** Turns of A alone and B's executions in the sync phase. */
const SYNC_ROUNDS = 4;
/** Schedules a workflow may have. */
const SCHEDULES_PER_WORKFLOW = SCHEDULE_LIMITS.perWorkflow;

const credentials = randomCredentials();
/** B's first admin, created with the organization. */
const B_ADMIN = { email: 'bench-b@platform.local', password: randomBytes(16).toString('hex') };

/** B's agent everywhere, and A's in the queue and delivery phases: a trivial expression. */
const TRIVIAL_AGENT = { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };
const TRIVIAL_INPUT = { input: { text: 'hello' } };
const TRIVIAL_OUTPUT = 'HELLO';

const services = new Services(ENTRY, ROOT);
/** The queue phase's worker, stopped while A's backlog is queued and started again (the others stay up). */
const workers = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_fair_${Date.now()}`);

const alive = () => {
  services.assertAlive();
  workers.assertAlive();
  if (interrupted.signal.aborted) throw new Error('interrupted');
};

// ---------------------------------------------------------------------------------------------
// Organizations and their things

interface Tenants {
  /** A: the bootstrap organization, through its admin (an instance operator). */
  a: JsonClient;
  /** B: created by the operator, through its own admin. */
  b: JsonClient;
}

/** Logs A's admin in, creates B with its admin, logs that one in; the transform plugin installed for both. */
async function tenants(service: JsonClient): Promise<Tenants> {
  const a = await loginAndInstallTransform(service, credentials);
  const res = await a.request('POST', '/api/organizations', { slug: 'bench-b', name: 'Bench B', tier: settings.tier, admin: B_ADMIN });
  if (res.status !== 201 || field(res.body, 'tier') !== settings.tier) throw unexpected('organization B creation', res.status, res.body);
  const b = await loginAndInstallTransform(service, { ...credentials, ADMIN_EMAIL: B_ADMIN.email, ADMIN_PASSWORD: B_ADMIN.password });
  const current = await a.request('GET', '/api/organizations/current');
  if (field(current.body, 'tier') !== settings.tier)
    throw unexpected(`organization A at tier ${settings.tier}`, current.status, current.body);
  return { a, b };
}

/** POST /api/agents (the trivial transform); answers the id. */
async function createAgent(client: JsonClient, name: string): Promise<string> {
  const res = await client.request('POST', '/api/agents', { name, ...TRIVIAL_AGENT });
  const id = field(res.body, 'id');
  if (res.status !== 201 || typeof id !== 'string') throw unexpected('agent creation', res.status, res.body);
  return id;
}

/** One queued execution (?wait=0); answers its id. */
async function submit(client: JsonClient, agentId: string): Promise<string> {
  const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=0`, TRIVIAL_INPUT);
  const id = field(res.body, 'id');
  if (res.status !== 202 || typeof id !== 'string') throw unexpected('execute ?wait=0', res.status, res.body);
  return id;
}

/** The environment of a service process: the license's tier, and outbound calls to loopback allowed (the receivers). */
function processEnv(databaseUrl: string, role: 'all' | 'api' | 'worker', license: Record<string, string>): Record<string, string> {
  return { ...serviceEnv(credentials, databaseUrl, role), ...license, OUTBOUND_ALLOWLIST: '127.0.0.1' };
}

/** A scratch database with one api and one worker process on it; answers the api's client and a connection for the figures. */
async function apiAndWorker(phase: string, license: Record<string, string>): Promise<{ api: JsonClient; db: Client }> {
  const databaseUrl = await databases.create(phase);
  log(`${phase}: starting one APP_ROLE=api and one APP_ROLE=worker process`);
  const api = await services.start('api', processEnv(databaseUrl, 'api', license), settings.readyTimeoutMs);
  await services.start('worker', processEnv(databaseUrl, 'worker', license), settings.readyTimeoutMs);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  return { api, db };
}

/** A row of latencies (ms) gathered by hand: `expected` samples, those missing counted as errors. */
function latencyRow(scenario: string, latencies: number[], expected: number, wallSeconds = NaN): Row {
  return {
    scenario,
    count: expected,
    errors: expected - latencies.length,
    ...summarize(latencies),
    throughput: NaN,
    wallSeconds,
  };
}

/** A row of a throughput: `count` done in `seconds`, with their latencies where known. */
function throughputRow(scenario: string, count: number, seconds: number, latencies: number[] = [], errors = 0): Row {
  return { scenario, count, errors, ...summarize(latencies), throughput: count / seconds, wallSeconds: seconds };
}

/** What one resource came to. */
interface Outcome {
  resource: string;
  /** B's latency alone and while A floods. */
  bAlone: Row;
  bFlooded: Row;
  /** A's throughput alone and while B makes its requests. */
  aAlone: Row;
  aWithB: Row;
  notes: string[];
}

// ---------------------------------------------------------------------------------------------
// A closed-loop flood whose completions are kept with their time, to count them by window

interface Completion {
  /** performance.now() when it was answered. */
  at: number;
  ms: number;
  ok: boolean;
}

class Flood {
  readonly completions: Completion[] = [];
  private readonly stopper = new AbortController();
  private running?: Promise<unknown>;
  private readonly problems: string[] = [];

  /** `clients` callers repeating `call` (null: success, else what was wrong) until stopped. */
  start(clients: number, call: () => Promise<string | null>): void {
    const signal = AbortSignal.any([this.stopper.signal, interrupted.signal]);
    this.running = runLoad(
      clients,
      Infinity,
      async () => {
        const begin = performance.now();
        const problem = await call().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
        const at = performance.now();
        this.completions.push({ at, ms: at - begin, ok: problem === null });
        if (problem !== null && this.problems.length < 5) this.problems.push(problem);
        return problem;
      },
      signal,
    );
  }

  /** The calls answered within the windows [from, to): a row of their rate and latencies. */
  windows(scenario: string, windows: Array<[number, number]>): Row {
    const within = this.completions.filter((c) => windows.some(([from, to]) => c.at >= from && c.at < to));
    const ok = within.filter((c) => c.ok);
    if (within.length > ok.length) log(`${scenario}: ${within.length - ok.length} failed, e.g.:\n    ${this.problems.join('\n    ')}`);
    return throughputRow(
      scenario,
      ok.length,
      windows.reduce((sum, [from, to]) => sum + (to - from), 0) / 1000,
      ok.map((c) => c.ms),
      within.length - ok.length,
    );
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.running;
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 1: sync execute while A floods the expression sandbox with slow hook mappings

async function syncPhase(license: Record<string, string>): Promise<Outcome> {
  const databaseUrl = await databases.create('sync');
  log('sync: starting one APP_ROLE=all process');
  const service = await services.start('service', processEnv(databaseUrl, 'all', license), settings.readyTimeoutMs);
  try {
    const { a, b } = await tenants(service);
    const bAgent = await createAgent(b, 'b-sync');
    const bCall = async (): Promise<string | null> => {
      const res = await b.request('POST', `/api/agents/${bAgent}/execute?wait=30`, TRIVIAL_INPUT);
      if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
      if (field(res.body, 'status') !== 'succeeded' || field(res.body, 'output') !== TRIVIAL_OUTPUT) return `200 but ${brief(res.body)}`;
      return null;
    };

    const mapping = `{ "n": $count($sort([1..${settings.floodSort}])) }`;
    const { id: workflowId } = await createWorkflow(a, BENCH_WORKFLOW);
    const created = await a.request('POST', `/api/workflows/${workflowId}/triggers`, {
      name: 'flood',
      scheme: 'bearer',
      mapping,
      responseMode: 'async',
    });
    const triggerId = field(created.body, 'id');
    const token = field(created.body, 'secret');
    if (created.status !== 201 || typeof triggerId !== 'string' || typeof token !== 'string')
      throw unexpected('trigger creation', created.status, created.body);
    // The hook is public: the trigger's bearer token is all it takes.
    const hook = new JsonClient(service.port, token);
    const aCall = async (): Promise<string | null> => {
      const res = await hook.request('POST', `/api/hooks/${triggerId}`, { from: 'a' });
      return res.status === 202 ? null : `HTTP ${res.status} ${brief(res.body)}`;
    };

    log(`sync: B alone, ${settings.syncWarmup} warm-up then ${settings.syncRequests} executions one at a time`);
    reportErrors('sync: B warm-up', await runLoad(1, settings.syncWarmup, bCall, interrupted.signal));
    const bAlone = loadRow('sync execute: B alone', await runLoad(1, settings.syncRequests, bCall, interrupted.signal));
    alive();

    log(`sync: A floods with ${settings.floodClients} hook clients, mapping ${mapping}`);
    const flood = new Flood();
    flood.start(settings.floodClients, aCall);
    // A's figures alone and with B taken in turns within the one flood, so that its drift (and
    // the machine's noise) falls on both alike.
    const alone: Array<[number, number]> = [];
    const withB: Array<[number, number]> = [];
    const bLoad: LoadResult[] = [];
    try {
      await sleep(settings.floodWarmupMs, undefined, { signal: interrupted.signal });
      log(`sync: ${SYNC_ROUNDS} rounds of A alone for ${settings.floodMs / SYNC_ROUNDS / 1000} s, then B's executions while A floods`);
      for (let round = 0; round < SYNC_ROUNDS; round++) {
        const t0 = performance.now();
        await sleep(settings.floodMs / SYNC_ROUNDS, undefined, { signal: interrupted.signal });
        const t1 = performance.now();
        // B's turn lasts as long as A's turn alone (and has at least its share of the requests):
        // A's throughput with B is counted over a window as long as the one alone, not over the
        // second or so that 50 quick requests take (shorter than one of A's hooks).
        const requests =
          Math.ceil(((round + 1) * settings.syncRequests) / SYNC_ROUNDS) - Math.ceil((round * settings.syncRequests) / SYNC_ROUNDS);
        bLoad.push(await runLoad(1, requests, bCall, interrupted.signal));
        while (performance.now() - t1 < t1 - t0) bLoad.push(await runLoad(1, 10, bCall, interrupted.signal));
        alone.push([t0, t1]);
        withB.push([t1, performance.now()]);
      }
    } finally {
      await flood.stop();
    }
    const bFlooded = loadRow('sync execute: B, A flooding', {
      latencies: bLoad.flatMap((l) => l.latencies),
      errors: bLoad.reduce((sum, l) => sum + l.errors, 0),
      errorSamples: bLoad.flatMap((l) => l.errorSamples).slice(0, 5),
      elapsedMs: bLoad.reduce((sum, l) => sum + l.elapsedMs, 0),
    });
    const aAlone = flood.windows('sync: A hooks accepted, alone', alone);
    const aWithB = flood.windows('sync: A hooks accepted, with B', withB);
    alive();
    // The service processes inherit this environment: EXPRESSION_THREADS, or the sandbox's default.
    const threads = Number(process.env.EXPRESSION_THREADS) || Math.min(4, availableParallelism()) + 1;
    const aShare = Math.min(threads - 1, Number(process.env.ORG_MAX_EXPRESSIONS) || Math.max(1, availableParallelism() - 1));
    return {
      resource: 'sync execute',
      bAlone,
      bFlooded,
      aAlone,
      aWithB,
      notes: [
        `A: ${settings.floodClients} clients POST /api/hooks/:id (bearer, async), mapping ${mapping}, each accepted hook starting a ` +
          `3-step run in the same process; ${threads} sandbox threads, A's share at most ${Math.max(1, aShare)}`,
        `B: POST /api/agents/:id/execute?wait=30 ($uppercase), one at a time, ${settings.syncRequests} alone and ${bFlooded.count} flooded (turns as long as A's alone)`,
      ],
    };
  } finally {
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 2: queue wait of B's single executions while A has thousands queued

interface Wait {
  /** started_at − created_at, finished_at − created_at (ms). */
  queuedMs: number | null;
  finishedMs: number | null;
  /** A's executions (of `aAgent`) created before it and not started when it was created. */
  backlog: number;
  /** Of those, the ones that started after it: how far it went past A's queue. */
  overtaken: number;
}

/** B's executions `ids` in the order created, each with its waits and A's backlog at its creation. */
async function waits(db: Client, ids: string[], aAgent: string | null): Promise<Wait[]> {
  const { rows } = await db.query<Wait>(
    `SELECT extract(epoch FROM b.started_at - b.created_at)::float8 * 1000 AS "queuedMs",
            extract(epoch FROM b.finished_at - b.created_at)::float8 * 1000 AS "finishedMs",
            (SELECT count(*) FROM agent_executions a
              WHERE a.agent_id = $2 AND a.created_at <= b.created_at AND (a.started_at IS NULL OR a.started_at > b.created_at))::int AS backlog,
            (SELECT count(*) FROM agent_executions a
              WHERE a.agent_id = $2 AND a.created_at <= b.created_at AND a.started_at > b.started_at)::int AS overtaken
       FROM agent_executions b WHERE b.id = ANY($1::uuid[]) AND b.status = 'succeeded' ORDER BY b.created_at`,
    [ids, aAgent],
  );
  return rows;
}

/** Polls until every one of `ids` is final. */
async function waitForFinal(db: Client, ids: string[]): Promise<void> {
  const deadline = Date.now() + settings.asyncTimeoutMs;
  for (;;) {
    const { rows } = await db.query<{ open: number }>(
      `SELECT count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS open FROM agent_executions WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    if (rows[0].open === 0) return;
    alive();
    if (Date.now() > deadline) throw new Error(`after ${settings.asyncTimeoutMs / 1000} s ${rows[0].open} execution(s) still open`);
    await sleep(200);
  }
}

/** B's singles, one every `spacingMs`; answers their ids. */
async function singles(b: JsonClient, agentId: string, count: number, spacingMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    alive();
    const next = performance.now() + spacingMs;
    ids.push(await submit(b, agentId));
    await sleep(Math.max(0, next - performance.now()));
  }
  return ids;
}

/** A's flood: `queueFlood` executions of a fresh agent submitted (no worker running); answers the agent. */
async function submitFlood(a: JsonClient, name: string): Promise<string> {
  const agentId = await createAgent(a, name);
  log(`queue: A submits ${settings.queueFlood} executions (?wait=0), ${settings.enqueueClients} clients, no worker running`);
  const submitted = await runLoad(
    settings.enqueueClients,
    settings.queueFlood,
    async () => {
      await submit(a, agentId);
      return null;
    },
    interrupted.signal,
  );
  reportErrors(`queue: ${name}`, submitted);
  if (submitted.errors) throw new Error(`queue: ${submitted.errors} of A's submissions failed`);
  log(`queue: A's executions submitted in ${fixed(submitted.elapsedMs / 1000, 1)} s`);
  return agentId;
}

async function queuePhase(license: Record<string, string>): Promise<Outcome> {
  const databaseUrl = await databases.create('queue');
  log('queue: starting one APP_ROLE=api process, and one APP_ROLE=worker process at times');
  const api = await services.start('api', processEnv(databaseUrl, 'api', license), settings.readyTimeoutMs);
  const startWorker = () => workers.start('worker', processEnv(databaseUrl, 'worker', license), settings.readyTimeoutMs);
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { a, b } = await tenants(api);
    const bAgent = await createAgent(b, 'b-queue');
    const samples = settings.queueSamples;
    await startWorker();
    // Warm both organizations' paths up (not measured).
    await waitForFinal(db, [await submit(a, await createAgent(a, 'a-warmup')), ...(await singles(b, bAgent, 5, 20))]);

    log(`queue: B alone, ${samples} single executions`);
    const aloneIds = await singles(b, bAgent, samples, 100);
    await waitForFinal(db, aloneIds);
    const alone = await waits(db, aloneIds, null);

    // A's backlog is queued while no worker runs, so it is all there when the worker comes.
    await workers.stopAll();
    const soloFlood = await submitFlood(a, 'a-flood-alone');
    log('queue: starting the worker, A alone');
    await startWorker();
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: soloFlood }, settings.asyncTimeoutMs, alive);
    const aAloneFigures = await drainFigures(db, soloFlood);
    const drainMs = (1000 * aAloneFigures.succeeded) / aAloneFigures.throughput;

    // B's singles spread over the time A's backlog took to drain alone.
    await workers.stopAll();
    const flood = await submitFlood(a, 'a-flood-with-b');
    const spacingMs = Math.max(10, Math.floor((0.8 * drainMs) / samples));
    log(`queue: starting the worker; B's ${samples} single executions, one every ${spacingMs} ms, while A's backlog drains`);
    await startWorker();
    const floodedIds = await singles(b, bAgent, samples, spacingMs);
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: flood }, settings.asyncTimeoutMs, alive);
    await waitForFinal(db, floodedIds);
    const flooded = await waits(db, floodedIds, flood);
    const aWithBFigures = await drainFigures(db, flood);
    workers.assertAlive();
    alive();

    const queued = (rows: Wait[]) => rows.flatMap((w) => (w.queuedMs === null ? [] : [w.queuedMs]));
    const finished = (rows: Wait[]) => summarize(rows.flatMap((w) => (w.finishedMs === null ? [] : [w.finishedMs])));
    const backlogs = flooded.map((w) => w.backlog).sort((x, y) => x - y);
    const aRow = (scenario: string, f: typeof aAloneFigures): Row => ({
      scenario,
      count: f.succeeded,
      errors: f.total - f.succeeded,
      p50: f.p50,
      p99: f.p99,
      mean: f.mean,
      throughput: f.throughput,
      wallSeconds: f.succeeded / f.throughput,
    });
    return {
      resource: 'async queue wait',
      bAlone: latencyRow('queue wait: B alone (started − created)', queued(alone), samples),
      bFlooded: latencyRow('queue wait: B, A queued (started − created)', queued(flooded), samples),
      aAlone: aRow('queue: A executions drained, alone', aAloneFigures),
      aWithB: aRow('queue: A executions drained, with B', aWithBFigures),
      notes: [
        `A: ${settings.queueFlood} executions ($uppercase) queued (${settings.enqueueClients} clients, no worker running), ` +
          'then drained by 1 worker process started after them',
        `B: ${samples} single executions (?wait=0) alone (100 ms apart) and once the worker is up again (${spacingMs} ms apart, ` +
          `over 80 % of A's drain alone); A's executions waiting ahead of each when it was created: min ${backlogs[0] ?? '-'}, ` +
          `median ${backlogs[Math.floor(backlogs.length / 2)] ?? '-'}, max ${backlogs[backlogs.length - 1] ?? '-'}`,
        `B flooded, in the order sent (A's executions ahead → of them started after B → B's queue wait): ` +
          flooded.map((w) => `${w.backlog} → ${w.overtaken} → ${fixed(w.queuedMs ?? NaN, 0)} ms`).join(', '),
        `B's time to finished (finished − created): alone p50 ${fixed(finished(alone).p50, 1)} / p99 ${fixed(finished(alone).p99, 1)} ms, ` +
          `flooded p50 ${fixed(finished(flooded).p50, 1)} / p99 ${fixed(finished(flooded).p99, 1)} ms`,
        "A's rows: p50/p99/mean = run time (started_at → finished_at); throughput = succeeded / (last finish − first start)",
      ],
    };
  } finally {
    await db.end();
    await workers.stopAll();
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 3: webhook delivery while A's endpoints time out

/**
 * Loopback receivers in this process, each endpoint on a port of its own (the service keeps a
 * connection pool per scheme, host and port: endpoints on one port would share one pool):
 * A's answer after BENCH_SLOW_RECEIVER_SECONDS, B's at once. Every request's arrival is kept.
 */
class Receivers {
  /** performance.now() of each request to A's endpoints. */
  readonly aArrivals: number[] = [];
  /** performance.now() of each receipt at B's endpoint, by webhook-id. */
  readonly bReceipts = new Map<string, number>();
  private readonly servers: Server[] = [];
  /** B's URL, then A's. */
  private readonly urls: string[] = [];

  async start(): Promise<void> {
    for (let n = 0; n <= settings.deliveryEndpoints; n++) {
      const slow = n > 0;
      const server = createServer((req, res) => this.handle(slow, req, res));
      this.servers.push(server);
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      this.urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/${slow ? `a${n}` : 'b'}`);
    }
  }

  get bUrl(): string {
    return this.urls[0];
  }

  get aUrls(): string[] {
    return this.urls.slice(1);
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.splice(0).map((server) => {
        server.closeAllConnections();
        return new Promise<void>((done) => server.close(() => done()));
      }),
    );
  }

  private handle(slow: boolean, req: IncomingMessage, res: ServerResponse): void {
    if (slow) this.aArrivals.push(performance.now());
    req.resume();
    req.on('end', () => {
      if (!slow) {
        this.bReceipts.set(String(req.headers['webhook-id']), performance.now());
        res.writeHead(204).end();
        return;
      }
      const timer = setTimeout(() => res.writeHead(204).end(), settings.slowReceiverMs);
      res.on('close', () => clearTimeout(timer));
    });
  }
}

/** A's endpoints on the slow receivers, subscribed to its executions' events; answers A's agent. */
async function prepareA(a: JsonClient, receivers: Receivers): Promise<string> {
  for (const url of receivers.aUrls) {
    const res = await a.request('POST', '/api/webhooks', { url, eventTypes: ['agent.execution.*'] });
    if (res.status !== 201) throw unexpected('endpoint creation (A)', res.status, res.body);
  }
  return createAgent(a, 'a-events');
}

/** A's events: one execution every 1/BENCH_DELIVERY_EVENTS_PER_SECOND s until `signal`; answers how many. */
async function eventStream(a: JsonClient, agentId: string, signal: AbortSignal): Promise<number> {
  const everyMs = 1000 / settings.deliveryEventsPerSecond;
  const begin = performance.now();
  const pending: Array<Promise<string>> = [];
  while (!signal.aborted) {
    pending.push(submit(a, agentId));
    const next = begin + pending.length * everyMs;
    await sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(pending);
  return pending.length;
}

/**
 * B's test events: one after another's answer (`windowMs` 0), or one every `windowMs` / count
 * whether the ones before were answered or not (a test request waits up to 15 s for its first
 * attempt). Answers each one's send time by message id.
 */
async function testEvents(b: JsonClient, endpointId: string, count: number, windowMs: number): Promise<Map<string, number>> {
  const sent = new Map<string, number>();
  const send = async () => {
    const at = performance.now();
    const res = await b.request('POST', `/api/webhooks/${endpointId}/test`);
    const messageId = field(res.body, 'messageId');
    if ((res.status !== 200 && res.status !== 202) || typeof messageId !== 'string')
      throw unexpected('test event (B)', res.status, res.body);
    sent.set(messageId, at);
  };
  const begin = performance.now();
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    alive();
    if (windowMs === 0) {
      await send();
      continue;
    }
    await sleep(Math.max(0, begin + (i * windowMs) / count - performance.now()));
    pending.push(send());
  }
  await Promise.all(pending);
  return sent;
}

/** Waits (up to the async timeout) until B's receiver got every one of `sent`; answers each one's send time and latency (ms), in the order sent. */
async function receipts(receivers: Receivers, sent: Map<string, number>): Promise<Array<{ at: number; ms: number }>> {
  const deadline = Date.now() + settings.asyncTimeoutMs;
  while ([...sent.keys()].some((id) => !receivers.bReceipts.has(id)) && Date.now() < deadline) {
    alive();
    await sleep(200);
  }
  return [...sent]
    .flatMap(([id, at]) => (receivers.bReceipts.has(id) ? [{ at, ms: receivers.bReceipts.get(id)! - at }] : []))
    .sort((x, y) => x.at - y.at);
}

/** Where B's flooded deliveries spent their time, from the rows: message created → first attempt. */
async function firstAttempts(db: Client, endpointId: string): Promise<{ p50: number; p99: number }> {
  const { rows } = await db.query<{ ms: number }>(
    `SELECT extract(epoch FROM min(a.attempted_at) - m.created_at)::float8 * 1000 AS ms
       FROM webhook_messages m JOIN webhook_attempts a ON a.message_id = m.id
      WHERE m.endpoint_id = $1 GROUP BY m.id, m.created_at`,
    [endpointId],
  );
  return summarize(rows.map((r) => r.ms));
}

/** A's stream for BENCH_DELIVERY_SECONDS (with B's test events spread over it, when `b` is given); answers A's row. */
async function streamWindow(
  a: JsonClient,
  aAgent: string,
  receivers: Receivers,
  scenario: string,
  b?: { client: JsonClient; endpointId: string },
): Promise<{ aRow: Row; t0: number; sent?: Map<string, number> }> {
  const stop = new AbortController();
  const t0 = performance.now();
  const stream = eventStream(a, aAgent, AbortSignal.any([stop.signal, interrupted.signal]));
  let bEvents: Promise<Map<string, number>> | undefined;
  try {
    // B's first event a second into A's stream, the last one 2 s before it ends (answered maybe after it).
    await sleep(1000, undefined, { signal: interrupted.signal });
    if (b) {
      bEvents = testEvents(b.client, b.endpointId, settings.deliverySamples, settings.deliveryMs - 3000);
      // Awaited below; a failure meanwhile is not left unhandled.
      bEvents.catch(() => undefined);
    }
    await sleep(Math.max(0, t0 + settings.deliveryMs - performance.now()), undefined, { signal: interrupted.signal });
  } finally {
    stop.abort();
  }
  const t1 = performance.now();
  const events = await stream;
  const arrivals = receivers.aArrivals.filter((at) => at >= t0 && at < t1).length;
  const aRow = throughputRow(scenario, arrivals, (t1 - t0) / 1000);
  log(`${scenario}: ${events} events, ${arrivals} requests to A's receivers in ${fixed((t1 - t0) / 1000, 1)} s`);
  return { aRow, t0, sent: await bEvents };
}

async function deliveriesPhase(license: Record<string, string>): Promise<Outcome> {
  const receivers = new Receivers();
  await receivers.start();
  const samples = settings.deliverySamples;
  try {
    let bAlone: Row;
    let bFlooded: Row;
    let aWithB: Row;
    let bBreakdown: { p50: number; p99: number };
    /** B's flooded latencies by when each was sent into A's stream. */
    let bTimeline: string;
    const { api, db } = await apiAndWorker('deliveries', license);
    try {
      const { a, b } = await tenants(api);
      const res = await b.request('POST', '/api/webhooks', { url: receivers.bUrl, eventTypes: ['agent.execution.*'] });
      const endpointId = field(res.body, 'id');
      if (res.status !== 201 || typeof endpointId !== 'string') throw unexpected('endpoint creation (B)', res.status, res.body);

      // Warm-up, not measured.
      await receipts(receivers, await testEvents(b, endpointId, 3, 0));
      log(`deliveries: B alone, ${samples} test events`);
      const aloneStart = performance.now();
      bAlone = latencyRow(
        'delivery: B alone (request → receipt)',
        (await receipts(receivers, await testEvents(b, endpointId, samples, 0))).map((r) => r.ms),
        samples,
        (performance.now() - aloneStart) / 1000,
      );

      const aAgent = await prepareA(a, receivers);
      log(
        `deliveries: A streams ${settings.deliveryEventsPerSecond} events/s to ${settings.deliveryEndpoints} endpoints answering ` +
          `after ${settings.slowReceiverMs / 1000} s, for ${settings.deliveryMs / 1000} s; B's ${samples} test events spread over it`,
      );
      const window = await streamWindow(a, aAgent, receivers, 'delivery: A requests to its receivers/s, with B', { client: b, endpointId });
      aWithB = window.aRow;
      const got = await receipts(receivers, window.sent!);
      bFlooded = latencyRow(
        'delivery: B, A flooding (request → receipt)',
        got.map((r) => r.ms),
        samples,
        (Math.max(...got.map((r) => r.at + r.ms)) - window.t0) / 1000,
      );
      bTimeline = got.map((r) => `${fixed((r.at - window.t0) / 1000, 1)} s: ${fixed(r.ms, 0)} ms`).join(', ');
      bBreakdown = await firstAttempts(db, endpointId);
      alive();
    } finally {
      await db.end();
      await services.stopAll();
    }

    // A alone: processes, a database and endpoints of its own (nothing of the first stream left).
    const fresh = await apiAndWorker('deliveries_alone', license);
    let aAlone: Row;
    try {
      const { a } = await tenants(fresh.api);
      const aAgent = await prepareA(a, receivers);
      log(`deliveries: A alone, the same stream`);
      aAlone = (await streamWindow(a, aAgent, receivers, 'delivery: A requests to its receivers/s, alone')).aRow;
      alive();
    } finally {
      await fresh.db.end();
      await services.stopAll();
    }
    return {
      resource: 'webhook delivery',
      bAlone,
      bFlooded,
      aAlone,
      aWithB,
      notes: [
        `A: ${settings.deliveryEndpoints} endpoints (agent.execution.*), each on its own port, whose receivers answer after ${settings.slowReceiverMs / 1000} s ` +
          `(the service gives up at 15 s), ${settings.deliveryEventsPerSecond} executions/s for ${settings.deliveryMs / 1000} s ` +
          `(${settings.deliveryEndpoints} messages each); A's row: requests its receivers got per second while the stream ran`,
        `B: POST /api/webhooks/:id/test, ${samples} alone (one after another) and ${samples} spread over A's stream; ` +
          `latency = the request sent → B's receiver got it; flooded, message created → first attempt p50 ${fixed(bBreakdown.p50, 0)} ms, ` +
          `p99 ${fixed(bBreakdown.p99, 0)} ms`,
        `B flooded, by when each was sent into A's stream: ${bTimeline}`,
      ],
    };
  } finally {
    await receivers.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 4: schedule fire delay while A has hundreds due at the same minute

interface Fired {
  organizationId: string;
  status: string;
  startedMs: number | null;
  createdMs: number;
}

interface Made {
  workflowId: string;
  /** The schedule's path in the API. */
  path: string;
  firstFire: number;
}

/** `count` schedules `* * * * *` (UTC), SCHEDULES_PER_WORKFLOW to a workflow. */
async function createSchedules(client: JsonClient, name: string, count: number): Promise<Made[]> {
  const made: Made[] = [];
  for (let w = 0; made.length < count; w++) {
    alive();
    const { id: workflowId } = await createWorkflow(client, { ...BENCH_WORKFLOW, name: `${name}-${w + 1}` });
    for (let s = 0; s < SCHEDULES_PER_WORKFLOW && made.length < count; s++) {
      const res = await client.request('POST', `/api/workflows/${workflowId}/schedules`, {
        cron: '* * * * *',
        timezone: 'UTC',
        input: BENCH_WORKFLOW_INPUT,
      });
      const scheduleId = field(res.body, 'id');
      const next = field(res.body, 'nextFireAt');
      if (res.status !== 201 || typeof scheduleId !== 'string' || typeof next !== 'string')
        throw unexpected(`schedule creation (${name})`, res.status, res.body);
      made.push({ workflowId, path: `/api/workflows/${workflowId}/schedules/${scheduleId}`, firstFire: Date.parse(next) });
    }
  }
  return made;
}

/** One run of each workflow, waited for: the worker has run them before their schedules fire. */
async function warmWorkflows(client: JsonClient, made: Made[]): Promise<void> {
  for (const workflowId of new Set(made.map((m) => m.workflowId))) {
    const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=30`, { input: BENCH_WORKFLOW_INPUT });
    if (res.status !== 200 || field(res.body, 'status') !== 'succeeded') throw unexpected('warm-up run', res.status, res.body);
  }
}

/**
 * Waits for the minute `scheduledFor` and then until the runs of the expected schedules are all
 * final (at most until 55 s past it); answers every run of that occurrence.
 */
async function minute(db: Client, scheduledFor: number, expected: number, label: string): Promise<Fired[]> {
  log(`schedules: ${label}, waiting for ${new Date(scheduledFor).toISOString()}`);
  while (Date.now() < scheduledFor - 1000) {
    alive();
    await sleep(Math.min(1000, scheduledFor - 1000 - Date.now()));
  }
  const deadline = scheduledFor + 55_000;
  for (;;) {
    const { rows } = await db.query<Fired>(
      `SELECT organization_id AS "organizationId", status,
              extract(epoch FROM started_at - $1::timestamptz)::float8 * 1000 AS "startedMs",
              extract(epoch FROM created_at - $1::timestamptz)::float8 * 1000 AS "createdMs"
         FROM workflow_runs
        WHERE triggered_by->>'type' = 'schedule' AND (triggered_by->>'scheduledFor')::timestamptz = $1`,
      [new Date(scheduledFor)],
    );
    const final = rows.filter((r) => !['queued', 'running'].includes(r.status)).length;
    if (rows.length >= expected && final === rows.length) return rows;
    alive();
    if (Date.now() > deadline) {
      log(`schedules: ${label}: 55 s past the minute, ${rows.length} of ${expected} runs, ${final} final`);
      return rows;
    }
    await sleep(500);
  }
}

async function schedulesPhase(license: Record<string, string>): Promise<Outcome> {
  const { api, db } = await apiAndWorker('schedules', license);
  try {
    const { a, b } = await tenants(api);
    const organization = async (client: JsonClient) => field((await client.request('GET', '/api/organizations/current')).body, 'id');
    const [aId, bId] = [await organization(a), await organization(b)];

    const bSchedules = await createSchedules(b, 'b', settings.schedulesB);
    await warmWorkflows(b, bSchedules);
    const first = Math.max(...bSchedules.map((s) => s.firstFire));
    const aloneRuns = await minute(db, first, settings.schedulesB, 'B alone');

    log(`schedules: creating A's ${settings.schedulesA} schedules`);
    const aSchedules = await createSchedules(a, 'a', settings.schedulesA);
    await warmWorkflows(a, aSchedules);
    const second = first + 60_000;
    const late = aSchedules.filter((s) => s.firstFire !== second).length;
    if (late) throw new Error(`${late} of A's schedules first fire after ${new Date(second).toISOString()}: they took too long to create`);
    const bothRuns = await minute(db, second, settings.schedulesA + settings.schedulesB, 'A and B');

    for (const s of bSchedules) {
      const res = await b.request('POST', `${s.path}/pause`);
      if (res.status !== 200) throw unexpected("pausing B's schedule", res.status, res.body);
    }
    const third = second + 60_000;
    if (Date.now() > third - 2000) throw new Error(`B's schedules were paused too late for ${new Date(third).toISOString()}`);
    const aAloneRuns = await minute(db, third, settings.schedulesA, 'A alone (B paused)');
    alive();

    const of = (runs: Fired[], organizationId: unknown) => runs.filter((r) => r.organizationId === organizationId);
    const started = (runs: Fired[]) => runs.flatMap((r) => (r.startedMs === null ? [] : [r.startedMs]));
    const bRow = (scenario: string, runs: Fired[]) =>
      latencyRow(
        scenario,
        started(runs.filter((r) => r.status === 'succeeded')),
        settings.schedulesB,
        Math.max(0, ...started(runs)) / 1000,
      );
    const aRow = (scenario: string, runs: Fired[]) => {
      const delays = started(runs.filter((r) => r.status === 'succeeded'));
      const lastSeconds = Math.max(0, ...started(runs)) / 1000;
      return throughputRow(scenario, delays.length, lastSeconds, delays, settings.schedulesA - delays.length);
    };
    const created = (runs: Fired[]) => summarize(runs.map((r) => r.createdMs));
    const bCreated = created(of(bothRuns, bId));
    return {
      resource: 'schedule fire delay',
      bAlone: bRow('schedule: B alone (started − minute)', of(aloneRuns, bId)),
      bFlooded: bRow('schedule: B, A due too (started − minute)', of(bothRuns, bId)),
      aAlone: aRow('schedule: A runs started/s, alone', of(aAloneRuns, aId)),
      aWithB: aRow('schedule: A runs started/s, with B', of(bothRuns, aId)),
      notes: [
        `A: ${settings.schedulesA} schedules '* * * * *' on ${Math.ceil(settings.schedulesA / SCHEDULES_PER_WORKFLOW)} workflows; ` +
          `B: ${settings.schedulesB} on one workflow; the 3-step transform workflow; 1 worker process`,
        `minutes: B alone ${new Date(first).toISOString().slice(11, 16)}, A and B ${new Date(second).toISOString().slice(11, 16)}, ` +
          `A alone ${new Date(third).toISOString().slice(11, 16)} UTC; A's rows: p50/p99 = its runs' started − minute, ` +
          `throughput = runs / the last one's delay`,
        `B with A due: created − minute p50 ${fixed(bCreated.p50, 0)} ms, p99 ${fixed(bCreated.p99, 0)} ms ` +
          `(A's: p99 ${fixed(created(of(bothRuns, aId)).p99, 0)} ms)`,
      ],
    };
  } finally {
    await db.end();
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function mark(ok: boolean): string {
  return ok ? 'PASS' : 'MISS';
}

function printReport(outcomes: Outcome[]): void {
  const out: string[] = [
    '',
    machineLine('Fair shares benchmark'),
    `Organizations A and B at tier ${settings.tier}; rate limits off; one process per role`,
    '',
    "B's latency, alone and while A floods the resource (ms):",
    ...formatRows(
      outcomes.flatMap((o) => [o.bAlone, o.bFlooded]),
      'samples',
    ),
    '',
    "A's throughput, alone and while B makes its requests:",
    ...formatRows(
      outcomes.flatMap((o) => [o.aAlone, o.aWithB]),
      'done',
      { throughput: 'per second' },
    ),
    '',
  ];
  for (const o of outcomes) out.push(`${o.resource}:`, ...o.notes.map((n) => `  ${n}`));
  out.push('', `Targets: B's p99 flooded ≤ ${LATENCY_FACTOR} × alone; A's throughput with B ≥ ${THROUGHPUT_SHARE * 100} % of alone`);
  for (const o of outcomes) {
    const bound = LATENCY_FACTOR * o.bAlone.p99;
    const ratio = o.bFlooded.p99 / o.bAlone.p99;
    const share = o.aWithB.throughput / o.aAlone.throughput;
    out.push(
      `  ${o.resource}: B p99 ${fixed(o.bFlooded.p99, 1)} ms flooded vs ${fixed(o.bAlone.p99, 1)} ms alone ` +
        `(${fixed(ratio, 2)}×, bound ${fixed(bound, 1)} ms) ${mark(o.bFlooded.p99 <= bound && o.bFlooded.errors === 0)}`,
      `  ${' '.repeat(o.resource.length)}  A ${fixed(o.aWithB.throughput, 1)}/s with B vs ${fixed(o.aAlone.throughput, 1)}/s alone ` +
        `(${fixed(share * 100, 1)} %) ${mark(share >= THROUGHPUT_SHARE)}`,
    );
  }
  out.push('');
  process.stdout.write(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases);
const stopEverything = async () => {
  await workers.close();
  await cleanup();
};

runBenchmark(ENTRY, interrupted, stopEverything, async () => {
  const license = await throwawayLicense(settings.tier);
  const run: Record<Phase, (license: Record<string, string>) => Promise<Outcome>> = {
    sync: syncPhase,
    queue: queuePhase,
    deliveries: deliveriesPhase,
    schedules: schedulesPhase,
  };
  const outcomes: Outcome[] = [];
  for (const phase of settings.phases) {
    alive();
    outcomes.push(await run[phase](license));
  }
  printReport(outcomes);
  // Failures under a flood are figures (a MISS); B failing alone means the benchmark is broken.
  const broken = outcomes.filter((o) => o.bAlone.errors);
  if (broken.length) throw new Error(`B's requests failed without a flood: ${broken.map((o) => o.resource).join(', ')}; see above`);
});
