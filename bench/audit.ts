/**
 * What the audit log costs a write route: `PATCH /api/agents/:id` (each one a change, so each
 * writes its audit event in the same transaction) against this build and against a baseline
 * build without the audit log, interleaved in chunks so that the machine's noise falls on both.
 *
 * The baseline is the commit before the audit log came (the parent of the first commit that
 * added src/modules/audit/audit.module.ts), checked out as a git worktree under /tmp with this
 * checkout's node_modules linked in, and built there; BENCH_BASELINE_DIR names a built checkout
 * to use instead. Each build runs as one APP_ROLE=all process on a scratch database of its own,
 * with the bootstrap admin, the transform plugin and 20 agents; closed-loop clients PATCH the
 * agent's description to a new value each time. After the load, the audit build's database must
 * hold one `agent.updated` event per successful PATCH.
 *
 * Target: the audit build's req/s at most 5 % below the baseline's.
 *
 * Run with `npm run bench:audit`. Settings (environment):
 *   DATABASE_URL                  PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_BASELINE_DIR            a built checkout without the audit log (default: made as above)
 *   BENCH_AUDIT_CLIENTS           concurrent clients (20)
 *   BENCH_AUDIT_AGENTS            agents the PATCHes go to in turn (20; 1: every client on one row, whose
 *                                 lock then orders the PATCHes one after another)
 *   BENCH_AUDIT_REQUESTS          measured PATCHes per build (10000)
 *   BENCH_AUDIT_CHUNK             PATCHes per build before switching to the other (1000)
 *   BENCH_AUDIT_WARMUP            PATCHes per build before measuring (1000)
 *   BENCH_READY_TIMEOUT_SECONDS   longest wait for a process to be ready (120)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import {
  brief,
  closeConnections,
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
  runBenchmark,
  runInterleaved,
  runLoad,
  ScratchDatabases,
  serviceEnv,
  Services,
  unexpected,
  verdict,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  baselineDir: process.env.BENCH_BASELINE_DIR,
  clients: intFromEnv('BENCH_AUDIT_CLIENTS', 20),
  agents: intFromEnv('BENCH_AUDIT_AGENTS', 20),
  requests: intFromEnv('BENCH_AUDIT_REQUESTS', 10_000),
  chunk: intFromEnv('BENCH_AUDIT_CHUNK', 1000),
  warmup: intFromEnv('BENCH_AUDIT_WARMUP', 1000),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

/** The audit log may cost at most this share of the baseline's req/s. */
const TARGET_OVERHEAD_PERCENT = 5;

const credentials = randomCredentials();
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_audit_${Date.now()}`);
/** Each build's processes, started from its own checkout. */
const started: Services[] = [];
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  (cleaning ??= (async () => {
    await Promise.all(started.map((services) => services.close()));
    await databases.dropAll();
    closeConnections();
  })());

/** A built checkout of the commit before the audit log (made once, then reused). */
function baselineDir(): string {
  if (settings.baselineDir) return resolve(settings.baselineDir);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const added = git('log', '--diff-filter=A', '--format=%H', '--', 'src/modules/audit/audit.module.ts').split('\n').pop();
  if (!added) throw new Error('no commit adds src/modules/audit/audit.module.ts: set BENCH_BASELINE_DIR');
  const commit = git('rev-parse', `${added}^`);
  const dir = `/tmp/platform-audit-baseline-${commit.slice(0, 12)}`;
  if (!existsSync(join(dir, 'dist', 'src', 'main.js'))) {
    log(`baseline: worktree of ${commit.slice(0, 12)} (before the audit log) in ${dir}, built`);
    if (!existsSync(dir)) git('worktree', 'add', '--detach', dir, commit);
    if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build-if-stale.mjs', '--force'], { cwd: dir, stdio: 'inherit' });
  }
  return dir;
}

/** One build's process on a scratch database, signed in, with its agents; answers the PATCH call and the database URL. */
async function start(name: string, dir: string): Promise<{ patch: () => Promise<string | null>; databaseUrl: string }> {
  const services = new Services(join(dir, 'dist', 'src', 'main.js'), dir);
  started.push(services);
  const databaseUrl = await databases.create(name);
  const service = await services.start(name, serviceEnv(credentials, databaseUrl, 'all'), settings.readyTimeoutMs);
  const client: JsonClient = await loginAndInstallTransform(service, credentials);
  const agentIds: string[] = [];
  for (let i = 0; i < settings.agents; i++) {
    const agent = await client.request('POST', '/api/agents', { name: `bench-${i}`, kind: 'transform.jsonata', config: { expression: 'n' } });
    const agentId = field(agent.body, 'id');
    if (agent.status !== 201 || typeof agentId !== 'string') throw unexpected('POST /api/agents', agent.status, agent.body);
    agentIds.push(agentId);
  }
  let n = 0;
  const patch = async () => {
    n++;
    const res = await client.request('PATCH', `/api/agents/${agentIds[n % agentIds.length]}`, { description: `change ${n}` });
    return res.status === 200 ? null : `HTTP ${res.status} ${brief(res.body)}`;
  };
  return { patch, databaseUrl };
}

async function updatesRecorded(databaseUrl: string): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    // Sealed or still in the inbox.
    const { rows } = await db.query<{ count: number }>(
      `SELECT ((SELECT count(*) FROM audit_events WHERE action = 'agent.updated') + (SELECT count(*) FROM audit_inbox WHERE action = 'agent.updated'))::int AS count`,
    );
    return rows[0].count;
  } finally {
    await db.end();
  }
}

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const baseline = await start('baseline', baselineDir());
  const audited = await start('audit', ROOT);
  log(`warm-up: ${settings.warmup} PATCHes each`);
  await runLoad(settings.clients, settings.warmup, baseline.patch, interrupted.signal);
  const warm = await runLoad(settings.clients, settings.warmup, audited.patch, interrupted.signal);
  log(`measuring: ${settings.requests} PATCHes each, ${settings.clients} clients, in chunks of ${settings.chunk}`);
  const results = await runInterleaved(
    { baseline: baseline.patch, audit: audited.patch },
    settings.clients,
    settings.requests,
    settings.chunk,
    interrupted.signal,
  );
  const rows = [loadRow('without audit log (baseline)', results.baseline), loadRow('with audit log', results.audit)];
  const recorded = await updatesRecorded(audited.databaseUrl);
  const expected = warm.latencies.length + results.audit.latencies.length;

  const overhead = (1 - rows[1].throughput / rows[0].throughput) * 100;
  console.log(`\n${machineLine(`Audit log cost on PATCH /api/agents/:id, ${settings.agents} agent(s)`)}`);
  for (const line of formatRows(rows, 'PATCHes', { scenario: 'build', throughput: 'req/s' })) console.log(line);
  console.log(`\naudit events recorded: ${recorded} agent.updated for ${expected} successful PATCHes (warm-up included)`);
  console.log(
    `overhead: ${fixed(overhead, 1)} % of the baseline's req/s (target ≤ ${TARGET_OVERHEAD_PERCENT} %): ${verdict(overhead <= TARGET_OVERHEAD_PERCENT)}`,
  );
  if (recorded !== expected) throw new Error(`expected ${expected} agent.updated events, found ${recorded}`);
});
