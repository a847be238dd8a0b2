/**
 * PostgreSQL's cost per run (issue 30): what one run of the 3-step bench workflow costs the
 * database, measured on a cluster the benchmark starts itself (so no other load shares its CPU)
 * with `pg_stat_statements` and `track_planning` on.
 *
 * Cases (BENCH_CASES, default `unnamed,prepared`): DB_STATEMENT_CACHE=0 (every statement sent
 * unnamed, parsed and planned per call), DB_STATEMENT_CACHE=100 (the default: statements
 * prepared per connection), and `generic` (prepared, with PostgreSQL told to plan every prepared
 * statement once: what planning still costs), BENCH_ROUNDS rounds alternating between them. Per case and round, a fresh database and one APP_ROLE=all process
 * on it, warmed up with BENCH_WARMUP_RUNS runs; then
 *   sync:  BENCH_SYNC_RUNS runs ?wait=30, 1 client (the figure n8n's 6.5 ms per run is for);
 *   drain: BENCH_DRAIN_RUNS runs ?wait=0 from 50 clients, run by the same process's worker,
 *          until every one is final.
 * For each: runs/s; statements per run; PostgreSQL's time per run, planning and execution
 * (pg_stat_statements, the service's database only); and the cluster's CPU per run (every
 * PostgreSQL process's, background ones included).
 *
 * After the table, per case and phase of the last round, the BENCH_TOP_STATEMENTS (10)
 * statements that cost PostgreSQL most, with their calls, planning and execution per call.
 *
 * Run with `npm run bench:pgcost`. Settings: BENCH_ROUNDS (2), BENCH_WARMUP_RUNS (200),
 * BENCH_SYNC_RUNS (500), BENCH_DRAIN_RUNS (2000), BENCH_TOP_STATEMENTS (10), SOAK_PG_BIN (as
 * bench:soak), BENCH_READY_TIMEOUT_SECONDS (120).
 */
import { resolve, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { Cluster, newestPgBin } from './cluster';
import {
  alignedTable,
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
  BENCH_WORKFLOW_OUTPUT,
  brief,
  closeConnections,
  createWorkflow,
  field,
  fixed,
  intFromEnv,
  JsonClient,
  log,
  loginAndInstallTransform,
  machineLine,
  randomCredentials,
  reportErrors,
  runBenchmark,
  runLoad,
  serviceEnv,
  Services,
  waitForDrain,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  rounds: intFromEnv('BENCH_ROUNDS', 2),
  warmupRuns: intFromEnv('BENCH_WARMUP_RUNS', 200),
  syncRuns: intFromEnv('BENCH_SYNC_RUNS', 500),
  drainRuns: intFromEnv('BENCH_DRAIN_RUNS', 2000),
  topStatements: intFromEnv('BENCH_TOP_STATEMENTS', 10),
  pgBin: process.env.SOAK_PG_BIN || newestPgBin(),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

/** `generic`, not run by default, is `prepared` with every plan generic (PGOPTIONS), to see what planning still costs. */
const ALL_CASES = [
  { name: 'unnamed', statementCache: 0, env: {} },
  { name: 'prepared', statementCache: 100, env: {} },
  { name: 'generic', statementCache: 100, env: { PGOPTIONS: '-c plan_cache_mode=force_generic_plan' } },
] as const;
const CASES = (process.env.BENCH_CASES || 'unnamed,prepared').split(',').map((name) => {
  const found = ALL_CASES.find((c) => c.name === name.trim());
  if (!found) throw new Error(`BENCH_CASES: unknown case ${name} (known: ${ALL_CASES.map((c) => c.name).join(', ')})`);
  return found;
});

const ENQUEUE_CLIENTS = 50;

interface Figures {
  case: string;
  phase: 'sync' | 'drain';
  runs: number;
  errors: number;
  runsPerSecond: number;
  statementsPerRun: number;
  planMsPerRun: number;
  execMsPerRun: number;
  cpuMsPerRun: number;
  /** The costliest statements: calls per run, planning and execution ms per call, the text's start. */
  top: Array<{ callsPerRun: number; planMs: number; execMs: number; query: string }>;
}

const interrupted = new AbortController();
const cluster = new Cluster(settings.pgBin, [
  '-c',
  'shared_preload_libraries=pg_stat_statements',
  '-c',
  'pg_stat_statements.track_planning=on',
  '-c',
  'pg_stat_statements.max=10000',
]);
const services = new Services(ENTRY, ROOT);
let admin: Client | undefined;

/** pg_stat_statements' totals for one database since the last reset. */
async function statementTotals(database: string): Promise<{ calls: number; planMs: number; execMs: number }> {
  const { rows } = await admin!.query<{ calls: number; plan_ms: number; exec_ms: number }>(
    `SELECT coalesce(sum(calls), 0)::float8 AS calls, coalesce(sum(total_plan_time), 0)::float8 AS plan_ms,
            coalesce(sum(total_exec_time), 0)::float8 AS exec_ms
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
    [database],
  );
  return { calls: rows[0].calls, planMs: rows[0].plan_ms, execMs: rows[0].exec_ms };
}

/** The `settings.topStatements` statements of one database that cost most since the last reset. */
async function costliest(database: string, runs: number): Promise<Figures['top']> {
  const { rows } = await admin!.query<{ calls: number; plan_ms: number; exec_ms: number; query: string }>(
    `SELECT calls::float8 AS calls, mean_plan_time AS plan_ms, mean_exec_time AS exec_ms, regexp_replace(query, '\\s+', ' ', 'g') AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
      ORDER BY total_plan_time + total_exec_time DESC LIMIT $2`,
    [database, settings.topStatements],
  );
  return rows.map((r) => ({ callsPerRun: r.calls / runs, planMs: r.plan_ms, execMs: r.exec_ms, query: r.query.slice(0, 140) }));
}

/** Runs `load` (which answers how many runs it made and how many failed) and what the database spent on them. */
async function measured(
  caseName: string,
  phase: Figures['phase'],
  database: string,
  load: () => Promise<{ runs: number; errors: number }>,
): Promise<Figures> {
  await admin!.query('SELECT pg_stat_statements_reset()');
  const cpuBefore = cluster.cpuSeconds();
  const begin = performance.now();
  const { runs, errors } = await load();
  const seconds = (performance.now() - begin) / 1000;
  const cpu = cluster.cpuSeconds() - cpuBefore;
  const totals = await statementTotals(database);
  return {
    case: caseName,
    phase,
    runs,
    errors,
    runsPerSecond: runs / seconds,
    statementsPerRun: totals.calls / runs,
    planMsPerRun: totals.planMs / runs,
    execMsPerRun: totals.execMs / runs,
    cpuMsPerRun: (cpu * 1000) / runs,
    top: await costliest(database, runs),
  };
}

async function runOnce(client: JsonClient, workflowId: string, wait: 0 | 30): Promise<string | null> {
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=${wait}`, { input: BENCH_WORKFLOW_INPUT });
  if (wait === 0) return res.status === 202 ? null : `HTTP ${res.status} ${brief(res.body)}`;
  if (res.status !== 200 || field(res.body, 'output') !== BENCH_WORKFLOW_OUTPUT) return `HTTP ${res.status} ${brief(res.body)}`;
  return null;
}

async function measureCase(round: number, which: (typeof ALL_CASES)[number]): Promise<Figures[]> {
  const database = `cost_${which.name}_${round}`;
  await admin!.query(`CREATE DATABASE ${database}`);
  const url = cluster.urlOf(database);
  const credentials = randomCredentials();
  log(`round ${round}, ${which.name}: one APP_ROLE=all process with DB_STATEMENT_CACHE=${which.statementCache}`);
  const service = await services.start(
    which.name,
    { ...serviceEnv(credentials, url, 'all'), DB_STATEMENT_CACHE: String(which.statementCache), ...which.env },
    settings.readyTimeoutMs,
  );
  const client = await loginAndInstallTransform(service, credentials);
  const { id: workflowId } = await createWorkflow(client, BENCH_WORKFLOW);
  reportErrors('warm-up', await runLoad(1, settings.warmupRuns, () => runOnce(client, workflowId, 30), interrupted.signal));

  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const sync = await measured(which.name, 'sync', database, async () => {
      const result = await runLoad(1, settings.syncRuns, () => runOnce(client, workflowId, 30), interrupted.signal);
      reportErrors(`${which.name} sync`, result);
      return { runs: result.latencies.length, errors: result.errors };
    });
    const { id: drainWorkflowId } = await createWorkflow(client, { ...BENCH_WORKFLOW, name: 'drain' });
    const drain = await measured(which.name, 'drain', database, async () => {
      const result = await runLoad(ENQUEUE_CLIENTS, settings.drainRuns, () => runOnce(client, drainWorkflowId, 0), interrupted.signal);
      reportErrors(`${which.name} enqueue`, result);
      await waitForDrain(db, { table: 'workflow_runs', column: 'workflow_id', id: drainWorkflowId }, 600_000, () => services.assertAlive());
      return { runs: result.latencies.length, errors: result.errors };
    });
    return [sync, drain];
  } finally {
    await db.end();
    await services.stopAll();
  }
}

function report(figures: Figures[]): void {
  const header = ['case', 'phase', 'runs', 'errors', 'runs/s', 'statements/run', 'plan ms/run', 'exec ms/run', 'pg CPU ms/run'];
  const cells = figures.map((f) => [
    f.case,
    f.phase,
    String(f.runs),
    String(f.errors),
    fixed(f.runsPerSecond, 1),
    fixed(f.statementsPerRun, 1),
    fixed(f.planMsPerRun, 2),
    fixed(f.execMsPerRun, 2),
    fixed(f.cpuMsPerRun, 2),
  ]);
  console.log(`\n${machineLine('PostgreSQL cost per 3-step run')}`);
  console.log(alignedTable(header, cells, 2).join('\n'));
  const last = figures.slice(-CASES.length * 2);
  for (const f of last) {
    console.log(`\n${f.case}, ${f.phase}: costliest statements (calls/run, plan ms/call, exec ms/call)`);
    for (const t of f.top) console.log(`  ${fixed(t.callsPerRun, 2).padStart(6)}  ${fixed(t.planMs, 3).padStart(7)}  ${fixed(t.execMs, 3).padStart(7)}  ${t.query}`);
  }
}

runBenchmark(
  ENTRY,
  interrupted,
  async () => {
    await services.close();
    await admin?.end().catch(() => undefined);
    closeConnections();
    await cluster.stop();
  },
  async () => {
    log(`starting a PostgreSQL cluster with pg_stat_statements (${settings.pgBin})`);
    await cluster.start();
    admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('CREATE EXTENSION pg_stat_statements');
    const figures: Figures[] = [];
    for (let round = 1; round <= settings.rounds && !interrupted.signal.aborted; round++)
      for (const which of round % 2 ? CASES : [...CASES].reverse()) figures.push(...(await measureCase(round, which)));
    report(figures);
  },
);
