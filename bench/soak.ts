/**
 * Soak benchmark (issue 30): the built service at a steady offered load for a long time, on a
 * PostgreSQL cluster the benchmark starts itself, once with stock settings and once with
 * autovacuum off. Does throughput hold, does p99 hold, do the hot tables stay small, does the
 * memory of the processes stay flat?
 *
 * Per case:
 *   1. a fresh cluster (initdb, stock postgresql.conf; `-c autovacuum=off` for the second case)
 *      on a free port, and one APP_ROLE=api and one APP_ROLE=worker process on it (a throwaway
 *      enterprise license: webhooks need the team tier), with a
 *      webhook endpoint that receives every execution and run event on a loopback receiver;
 *   2. calibration: SOAK_CALIBRATE_RECORDS records (3 executions of a transform.jsonata agent to
 *      1 run of the 3-step bench workflow) enqueued as fast as 50 clients can, then drained; the
 *      drain is records finished per second, from the rows;
 *   3. the soak: SOAK_MINUTES of open-loop load at SOAK_LOAD_PERCENT of that drain (the same
 *      mix, every record enqueued with ?wait=0), plus history reads (one per 4 records: a page
 *      of executions or runs), for SOAK_MINUTES. Per window of SOAK_WINDOW_MINUTES: records
 *      finished per second, p99 of the API calls, dead tuples of the hot tables, their sizes, the
 *      queue's job rows, the RSS of both processes and the cluster's CPU per finished record.
 *
 * The verdict compares the first and the last window (throughput and p99 within 10 %) and
 * fits the RSS after the first window (under 1 MiB/min).
 *
 * Run with `npm run bench:soak` (as root it runs the cluster as the `postgres` user). Settings:
 *   SOAK_CASES              stock,autovacuum-off (default both)
 *   SOAK_MINUTES            length of the load per case (60)
 *   SOAK_WINDOW_MINUTES     length of a reported window (5)
 *   SOAK_CALIBRATE_RECORDS  records of the calibration drain (4000)
 *   SOAK_LOAD_PERCENT       offered load, % of the calibrated drain (70)
 *   SOAK_PG_BIN             directory of initdb and postgres (the newest /usr/lib/postgresql/<v>/bin)
 *   BENCH_READY_TIMEOUT_SECONDS, WORKER_CONCURRENCY, DB_POOL_SIZE as in the other benchmarks
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import {
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
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
  runLoad,
  serviceEnv,
  Services,
  summarize,
  throwawayLicense,
  unexpected,
  verdict,
} from './support';
import { HOT_TABLES } from '../src/database/table-maintenance';
import { Cluster, newestPgBin } from './cluster';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const CASES = ['stock', 'autovacuum-off'] as const;
type Case = (typeof CASES)[number];

const settings = {
  cases: casesFromEnv(),
  minutes: intFromEnv('SOAK_MINUTES', 60),
  windowMinutes: intFromEnv('SOAK_WINDOW_MINUTES', 5),
  calibrateRecords: intFromEnv('SOAK_CALIBRATE_RECORDS', 4000),
  loadPercent: intFromEnv('SOAK_LOAD_PERCENT', 70),
  pgBin: process.env.SOAK_PG_BIN || newestPgBin(),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

const TARGETS = {
  /** Throughput and p99 of the last window within 10 % of the first. */
  drift: 0.1,
  /** RSS growth after the first window, per process. */
  rssMiBPerMinute: 1,
};
/** API calls in flight at most: beyond, a tick's calls are counted as not sent (the service fell behind). */
const MAX_IN_FLIGHT = 256;
const TICK_MS = 50;

function casesFromEnv(): Case[] {
  const raw = (process.env.SOAK_CASES || CASES.join(',')).split(',').map((c) => c.trim());
  const unknown = raw.filter((c) => !CASES.includes(c as Case));
  if (unknown.length) throw new Error(`SOAK_CASES: unknown case(s) ${unknown.join(', ')} (known: ${CASES.join(', ')})`);
  return CASES.filter((c) => raw.includes(c));
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** A webhook receiver on loopback that answers 200 and counts. */
async function startReceiver(): Promise<{ url: string; received: () => number; server: Server }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received: () => received, server };
}

interface Target {
  agentId: string;
  workflowId: string;
}

/** The i-th record of the mix: three executions, then one run of the 3-step workflow. */
function recordCall(client: JsonClient, target: Target, i: number): () => Promise<string | null> {
  if (i % 4 === 3)
    return async () => {
      const res = await client.request('POST', `/api/workflows/${target.workflowId}/run?wait=0`, { input: BENCH_WORKFLOW_INPUT });
      return res.status === 202 ? null : `run answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`;
    };
  return async () => {
    const res = await client.request('POST', `/api/agents/${target.agentId}/execute?wait=0`, { input: { text: `soak ${i}` } });
    return res.status === 202 ? null : `execute answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`;
  };
}

/** The i-th call of the soak: four records, then a page of history (executions or runs). */
function mixedCall(client: JsonClient, target: Target, i: number): () => Promise<string | null> {
  if (i % 5 !== 4) return recordCall(client, target, i - Math.floor(i / 5));
  const path = (i / 5) % 2 < 1 ? `/api/agents/${target.agentId}/history?limit=20` : `/api/workflows/${target.workflowId}/runs?limit=20`;
  return async () => {
    const res = await client.request('GET', path);
    return res.status === 200 ? null : `GET ${path} answered ${res.status}`;
  };
}

/** Records (executions and runs) finished in [from, to). */
async function finishedBetween(db: Client, from: Date, to: Date): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM agent_executions WHERE finished_at >= $1 AND finished_at < $2)
          + (SELECT count(*) FROM workflow_runs WHERE finished_at >= $1 AND finished_at < $2) AS n`,
    [from, to],
  );
  return Number(rows[0].n);
}

async function unfinished(db: Client): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM agent_executions WHERE status IN ('queued', 'running'))
          + (SELECT count(*) FROM workflow_runs WHERE status IN ('queued', 'running')) AS n`,
  );
  return Number(rows[0].n);
}

interface TableFigures {
  table: string;
  dead: number;
  mib: number;
}

async function tableFigures(db: Client): Promise<TableFigures[]> {
  const { rows } = await db.query<{ table: string; dead: string; bytes: string }>(
    // A partitioned table's figures are its partitions' sums.
    `SELECT t.name AS table, sum(coalesce(s.n_dead_tup, 0)) AS dead, sum(pg_total_relation_size(p.relid)) AS bytes
       FROM unnest($1::text[]) AS t(name) CROSS JOIN LATERAL pg_partition_tree(to_regclass(t.name)) AS p
       LEFT JOIN pg_stat_user_tables s ON s.relid = p.relid
      WHERE p.isleaf GROUP BY t.name`,
    [HOT_TABLES],
  );
  return rows.map((r) => ({ table: r.table, dead: Number(r.dead), mib: Number(r.bytes) / 1024 / 1024 }));
}

async function jobRows(db: Client): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM pgboss.job');
  return Number(rows[0].n);
}

interface Window {
  minute: number;
  throughput: number;
  p99: number;
  calls: number;
  errors: number;
  notSent: number;
  rss: Record<string, number>;
  cpuMsPerRecord: number;
  jobs: number;
  tables: TableFigures[];
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

async function soakCase(kind: Case, interrupted: AbortSignal): Promise<boolean> {
  const cluster = new Cluster(settings.pgBin, kind === 'autovacuum-off' ? ['-c', 'autovacuum=off'] : []);
  const services = new Services(ENTRY, ROOT);
  const receiver = await startReceiver();
  let db: Client | undefined;
  try {
    log(`${kind}: starting a PostgreSQL cluster (${settings.pgBin})`);
    await cluster.start();
    const admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('CREATE DATABASE soak');
    await admin.end();
    const url = cluster.urlOf('soak');
    const credentials = randomCredentials();
    // Webhooks need the team tier: the bootstrap organization is created at the licensed one.
    const license = await throwawayLicense('enterprise');
    const env = (role: 'api' | 'worker') => ({ ...serviceEnv(credentials, url, role), ...license, OUTBOUND_ALLOWLIST: '127.0.0.1' });
    const api = await services.start('api', env('api'), settings.readyTimeoutMs);
    await services.start('worker', env('worker'), settings.readyTimeoutMs);
    const client = await loginAndInstallTransform(api, credentials);
    const agent = await client.request('POST', '/api/agents', {
      name: 'soak',
      kind: 'transform.jsonata',
      config: { expression: '$uppercase(text)' },
    });
    if (agent.status !== 201) throw unexpected('agent registration', agent.status, agent.body);
    const workflow = await createWorkflow(client, BENCH_WORKFLOW);
    const hook = await client.request('POST', '/api/webhooks', {
      url: receiver.url,
      eventTypes: ['agent.execution.*', 'workflow.run.*'],
    });
    if (hook.status !== 201) throw unexpected('webhook endpoint', hook.status, hook.body);
    const target = { agentId: field(agent.body, 'id') as string, workflowId: workflow.id };
    db = new Client({ connectionString: url });
    await db.connect();

    log(`${kind}: calibrating the drain with ${settings.calibrateRecords} records`);
    const calibrationStart = new Date();
    let i = 0;
    const enqueued = await runLoad(50, settings.calibrateRecords, () => recordCall(client, target, i++)(), interrupted);
    if (enqueued.errors) throw new Error(`calibration: ${enqueued.errors} calls failed, e.g. ${enqueued.errorSamples[0]}`);
    while ((await unfinished(db)) > 0) {
      services.assertAlive();
      await sleep(250);
    }
    const calibrationEnd = new Date();
    const drain = (await finishedBetween(db, calibrationStart, calibrationEnd)) / ((+calibrationEnd - +calibrationStart) / 1000);
    const rate = (drain * settings.loadPercent) / 100;
    log(`${kind}: drain ${fixed(drain, 0)} records/s; offering ${fixed(rate, 0)} records/s for ${settings.minutes} min`);

    const windows: Window[] = [];
    const windowMs = settings.windowMinutes * 60_000;
    const pids = services.pids();
    let latencies: number[] = [];
    let errors = 0;
    let notSent = 0;
    let inFlight = 0;
    let call = 0;
    const started = performance.now();
    let windowStart = new Date();
    let cpuAtStart = cluster.cpuSeconds();
    let owed = 0;
    // Records per tick, and one history read per 4 records: 5 calls per 4 records.
    const callsPerTick = (rate * 5) / 4 / (1000 / TICK_MS);
    while (!interrupted.aborted && performance.now() - started < settings.minutes * 60_000) {
      owed += callsPerTick;
      for (; owed >= 1; owed--) {
        if (inFlight >= MAX_IN_FLIGHT) {
          notSent++;
          continue;
        }
        const send = mixedCall(client, target, call++);
        const begin = performance.now();
        inFlight++;
        void send()
          .catch((error: unknown) => (error instanceof Error ? error.message : String(error)))
          .then((problem) => {
            inFlight--;
            if (problem === null) latencies.push(performance.now() - begin);
            else errors++;
          });
      }
      await sleep(TICK_MS);
      const now = new Date();
      if (+now - +windowStart < windowMs) continue;
      services.assertAlive();
      const cpu = cluster.cpuSeconds();
      const finished = await finishedBetween(db, windowStart, now);
      const window: Window = {
        minute: Math.round((performance.now() - started) / 60_000),
        throughput: finished / ((+now - +windowStart) / 1000),
        p99: summarize(latencies).p99,
        calls: latencies.length,
        errors,
        notSent,
        rss: Object.fromEntries(pids.map(({ name, pid }) => [name, rssMiB(pid)])),
        cpuMsPerRecord: finished ? ((cpu - cpuAtStart) * 1000) / finished : 0,
        jobs: await jobRows(db),
        tables: await tableFigures(db),
      };
      windows.push(window);
      log(
        `${kind} @${window.minute} min: ${fixed(window.throughput, 1)} records/s, p99 ${fixed(window.p99, 1)} ms, ` +
          `${window.jobs} job rows, RSS ${Object.entries(window.rss)
            .map(([n, v]) => `${n} ${fixed(v, 0)} MiB`)
            .join(', ')}`,
      );
      [latencies, errors, notSent, windowStart, cpuAtStart] = [[], 0, 0, now, cpu];
    }
    return report(kind, drain, rate, windows);
  } finally {
    await db?.end().catch(() => undefined);
    await services.close();
    closeConnections();
    receiver.server.close();
    await cluster.stop();
  }
}

function report(kind: Case, drain: number, rate: number, windows: Window[]): boolean {
  console.log(`\n## ${kind}: drain ${fixed(drain, 0)} records/s, offered ${fixed(rate, 0)} records/s (${settings.loadPercent} %)\n`);
  console.log('| minute | records/s | p99 ms | calls | errors | not sent | pg CPU ms/record | job rows | RSS api MiB | RSS worker MiB |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const w of windows)
    console.log(
      `| ${w.minute} | ${fixed(w.throughput, 1)} | ${fixed(w.p99, 1)} | ${w.calls} | ${w.errors} | ${w.notSent} | ${fixed(w.cpuMsPerRecord, 2)} | ${w.jobs} | ${fixed(w.rss.api ?? 0, 0)} | ${fixed(w.rss.worker ?? 0, 0)} |`,
    );
  if (windows.length) {
    console.log('\nDead tuples / total size (MiB) per hot table, by window:\n');
    console.log(`| table | ${windows.map((w) => `@${w.minute}`).join(' | ')} |`);
    console.log(`|---|${windows.map(() => '---').join('|')}|`);
    for (const table of HOT_TABLES) {
      const cells = windows.map((w) => {
        const t = w.tables.find((x) => x.table === table);
        return t ? `${t.dead} / ${fixed(t.mib, 1)}` : '-';
      });
      console.log(`| ${table} | ${cells.join(' | ')} |`);
    }
  }
  if (windows.length < 2) {
    console.log('\nToo few windows for a verdict (SOAK_MINUTES / SOAK_WINDOW_MINUTES < 2).');
    return false;
  }
  const [first, last] = [windows[0], windows[windows.length - 1]];
  const throughputRatio = last.throughput / first.throughput;
  const p99Ratio = last.p99 / first.p99;
  const steady = windows.slice(1);
  const growth = Object.fromEntries(
    Object.keys(first.rss).map((name) => [name, slope(steady.map((w) => [w.minute, w.rss[name]] as [number, number]))]),
  );
  const throughputOk = Math.abs(1 - throughputRatio) <= TARGETS.drift;
  const p99Ok = p99Ratio <= 1 + TARGETS.drift;
  const rssOk = Object.values(growth).every((g) => g < TARGETS.rssMiBPerMinute);
  console.log('');
  console.log(`- throughput, last window / first: ${fixed(throughputRatio, 2)} ${verdict(throughputOk)}`);
  console.log(`- p99, last window / first: ${fixed(p99Ratio, 2)} ${verdict(p99Ok)}`);
  console.log(
    `- RSS after the first window: ${Object.entries(growth)
      .map(([n, g]) => `${n} ${fixed(g, 2)} MiB/min`)
      .join(', ')} ${verdict(rssOk)}`,
  );
  return throughputOk && p99Ok && rssOk;
}

async function main(): Promise<void> {
  if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` first`);
  const interrupted = new AbortController();
  process.once('SIGINT', () => {
    log('interrupted: ending the load and stopping the cluster');
    interrupted.abort();
  });
  console.log(machineLine(`bench:soak: ${settings.minutes} min per case, windows of ${settings.windowMinutes} min`));
  let ok = true;
  for (const kind of settings.cases) ok = (await soakCase(kind, interrupted.signal)) && ok;
  if (!ok) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
