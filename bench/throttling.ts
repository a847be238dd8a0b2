/**
 * Rate-limit and authentication overhead benchmark: the built service (dist/src/main.js), one
 * APP_ROLE=all process at a time on one scratch PostgreSQL database, answering authenticated
 * `GET /api/plugins` to a fixed number of closed-loop clients, in four configurations:
 *
 *   off     RATE_LIMIT_ENABLED=false                       (no tier limit, no RateLimit headers)
 *   memory  tier limits, counters in the process's memory  (no REDIS_URL)
 *   key     as memory, but the bearer is an API key        (see below)
 *   redis   tier limits, counters in Redis                 (REDIS_URL)
 *
 * off, memory and redis send the admin's JWT (access token); key sends the API key of a service
 * account with the admin role (POST /api/service-accounts, then POST
 * /api/service-accounts/:id/api-keys, no scopes). A key request must be refused on a session-only
 * route (GET /api/auth/me → 403), so the key is known to be taken as a key, not as a JWT.
 *
 * Each configuration runs twice, in the interleaved order off, memory, key, redis, redis, key,
 * memory, off (so each key run sits next to a JWT run with the same storage), each run on a
 * freshly started process (warm-up, then the measured requests). The report lists every run, then
 * per configuration the better of its two runs (higher req/s), the overhead of memory and Redis
 * against off, and the key path against the JWT path (memory against key).
 *
 * So that no request is throttled, a throwaway Ed25519 vendor key signs an enterprise license
 * (LICENSE_PUBLIC_KEYS / LICENSE_KEY: the single organization `default` is raised to enterprise),
 * and each run sets the organization's budget to 1,000,000 requests per minute
 * (PATCH /api/subscription, with the JWT) before measuring. A first process without LICENSE_KEY
 * creates the organization, its admin and the service account's key: on an empty database the
 * service installs LICENSE_KEY before it creates `default`, so nothing is raised, and later boots
 * skip the license as already installed. Every response must be 200 and carry
 * `RateLimit-Policy: "enterprise";q=1000000;w=60` when limits are on (with a JWT or a key), and
 * no such header when they are off; on Redis, the service's storage-failure counter
 * (rate_limit_storage_errors_total on /metrics) must stay 0, else requests were counted in the
 * process's memory instead of Redis and the Redis figures would be meaningless.
 *
 * Targets (better runs, req/s): Redis at most 15 % below off; the API key at most 10 % below the
 * JWT (key against memory).
 *
 * Run with `npm run bench:throttling`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database is created on it and dropped at the end
 *   BENCH_REDIS_URL                  Redis for the redis configuration (default redis://127.0.0.1:6379);
 *                                    the organization's counters are deleted from it at the end
 *   BENCH_THROTTLE_CLIENTS           concurrent clients (20)
 *   BENCH_THROTTLE_REQUESTS          measured requests per run (20000)
 *   BENCH_THROTTLE_WARMUP            warm-up requests per run, not measured (2000)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   DB_POOL_SIZE                     passed through to the service processes
 */
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RATE_LIMIT_WINDOW_SECONDS } from '../src/modules/licensing/domain/tiers';
import {
  brief,
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
  randomCredentials,
  reportErrors,
  Row,
  runLoad,
  ScratchDatabases,
  serviceEnv,
  Services,
  unexpected,
  verdict,
  cleanupOnce,
  runBenchmark,
  raiseRateLimit,
  throwawayLicense,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  clients: intFromEnv('BENCH_THROTTLE_CLIENTS', 20),
  requests: intFromEnv('BENCH_THROTTLE_REQUESTS', 20000),
  warmupRequests: intFromEnv('BENCH_THROTTLE_WARMUP', 2000),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

/** Redis may cost at most this share of the req/s without limits. */
const TARGET_REDIS_OVERHEAD_PERCENT = 15;
/** The API key may cost at most this share of the JWT's req/s (both with memory storage). */
const TARGET_KEY_OVERHEAD_PERCENT = 10;
/** Requests per minute for the organization: far above what a run sends. */
const BUDGET = 1_000_000;
const EXPECTED_POLICY = `"enterprise";q=${BUDGET};w=${RATE_LIMIT_WINDOW_SECONDS}`;
const PATH = '/api/plugins';

/** The API key's format (contract): prefix, 43 random and 6 checksum base62 characters. */
const API_KEY_FORMAT = /^plat_sa_[0-9A-Za-z]{49}$/;

type Configuration = 'off' | 'memory' | 'key' | 'redis';

interface ConfigurationSpec {
  label: string;
  /** On top of the common environment; '' counts as unset for the service. */
  env: Record<string, string>;
  /** Whether the tier guard runs, i.e. RateLimit headers are expected. */
  limited: boolean;
  /** The bearer of the measured requests: the admin's access token or the service account's API key. */
  bearer: 'jwt' | 'key';
}

const MEMORY_ENV = { RATE_LIMIT_ENABLED: 'true', REDIS_URL: '' };
const CONFIGURATIONS: Record<Configuration, ConfigurationSpec> = {
  off: { label: 'throttling off', env: { RATE_LIMIT_ENABLED: 'false', REDIS_URL: '' }, limited: false, bearer: 'jwt' },
  memory: { label: 'memory storage', env: MEMORY_ENV, limited: true, bearer: 'jwt' },
  key: { label: 'memory, API key', env: MEMORY_ENV, limited: true, bearer: 'key' },
  redis: { label: 'Redis storage', env: { RATE_LIMIT_ENABLED: 'true', REDIS_URL: settings.redisUrl }, limited: true, bearer: 'jwt' },
};

/**
 * Interleaved so that drift over the run (heat, caches, the database growing) hits every
 * configuration alike; each key run is next to a memory run, the JWT it is compared with.
 */
const ORDER: Configuration[] = ['off', 'memory', 'key', 'redis', 'redis', 'key', 'memory', 'off'];

/** Shared by every process of the run: the token of the first run stays valid in the others. */
const credentials = randomCredentials();

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_${Date.now()}`);

/** The `default` organization, for the Redis clean-up. */
let organizationId: string | undefined;

interface RunResult {
  configuration: Configuration;
  run: number;
  row: Row;
  warmupErrors: number;
  /** Hits counted in the organization's current window after the run (limits on only). */
  counted: number | null;
  /** Authenticated requests this process answered: PATCH, probes, warm-up, measured. */
  sent: number;
  /** rate_limit_storage_errors_total after the run (Redis only). */
  storageFailures: number | null;
}

// ---------------------------------------------------------------------------------------------
// API calls

/** null when the response is 200 and its RateLimit-Policy is the expected one (absent when limits are off). */
function check(res: JsonResponse, limited: boolean): string | null {
  if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
  const policy = res.headers['ratelimit-policy'];
  if (limited ? policy !== EXPECTED_POLICY : policy !== undefined) {
    return `RateLimit-Policy ${policy === undefined ? 'missing' : `'${String(policy)}'`}, expected ${limited ? `'${EXPECTED_POLICY}'` : 'none'}`;
  }
  return null;
}

/**
 * A first boot without LICENSE_KEY: migrations, organization `default` and its admin; logs in,
 * installs a plugin (so the list is not empty) and creates the service account's API key.
 * Answers the admin's access token and the key.
 */
async function prepare(databaseUrl: string): Promise<Pick<Setup, 'token' | 'apiKey'>> {
  log('prepare: first boot without LICENSE_KEY (organization default, admin, transform plugin, API key)');
  const service = await services.start(
    'service (prepare)',
    { ...serviceEnv(credentials, databaseUrl, 'all'), ...CONFIGURATIONS.off.env, LICENSE_KEY: '' },
    settings.readyTimeoutMs,
  );
  try {
    const client = await loginAndInstallTransform(service, credentials);
    const apiKey = await createApiKey(client);
    services.assertAlive();
    return { token: client.token!, apiKey };
  } finally {
    await services.stopAll();
  }
}

/**
 * An admin service account and its API key (every scope the role allows, the default expiry);
 * checks that a session-only route refuses the key, so the service takes it as a key.
 */
async function createApiKey(admin: JsonClient): Promise<string> {
  const account = await admin.request('POST', '/api/service-accounts', { name: 'bench', role: 'admin' });
  const accountId = field(account.body, 'id');
  if (account.status !== 201 || typeof accountId !== 'string') throw unexpected('POST /api/service-accounts', account.status, account.body);

  const created = await admin.request('POST', `/api/service-accounts/${accountId}/api-keys`, { name: 'bench' });
  const key = field(created.body, 'key');
  if (created.status !== 201 || typeof key !== 'string' || !API_KEY_FORMAT.test(key)) {
    // The key itself stays out of every message.
    const body = typeof key === 'string' ? { ...(created.body as object), key: `(${key.length} characters, hidden)` } : created.body;
    throw unexpected('POST /api/service-accounts/:id/api-keys', created.status, body);
  }

  const me = await admin.withToken(key).request('GET', '/api/auth/me');
  if (me.status !== 403) throw unexpected('GET /api/auth/me with the API key (403 expected)', me.status, me.body);
  return key;
}

/**
 * Polls GET PATH until it passes `check` (the limit is cached per process for a few seconds); at
 * most 10 s. Answers the number of requests.
 */
async function awaitPolicy(client: JsonClient, limited: boolean): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (let attempts = 1; ; attempts++) {
    const problem = check(await client.request('GET', PATH), limited);
    if (problem === null) return attempts;
    if (Date.now() > deadline) throw new Error(`sanity check of GET ${PATH} failed: ${problem}`);
    await sleep(250);
  }
}

/** Hits counted in the organization's window so far, from the `RateLimit` header (`r=` remaining of BUDGET). */
async function countedHits(client: JsonClient): Promise<number> {
  const res = await client.request('GET', PATH);
  const header = String(res.headers['ratelimit'] ?? '');
  const remaining = /;r=(\d+)/.exec(header)?.[1];
  if (res.status !== 200 || remaining === undefined) throw unexpected(`GET ${PATH} (RateLimit '${header}')`, res.status, res.body);
  return BUDGET - Number(remaining);
}

/** rate_limit_storage_errors_total from /metrics: requests counted in memory because Redis failed. */
async function storageFailures(service: JsonClient): Promise<number> {
  const res = await service.withToken(credentials.METRICS_TOKEN).request('GET', '/metrics');
  const match = /^rate_limit_storage_errors_total(?:\{[^}]*\})? (\S+)$/m.exec(typeof res.body === 'string' ? res.body : '');
  if (res.status !== 200 || !match) throw unexpected('GET /metrics (rate_limit_storage_errors_total)', res.status, res.body);
  return Number(match[1]);
}

// ---------------------------------------------------------------------------------------------
// A run

interface Setup {
  databaseUrl: string;
  /** LICENSE_PUBLIC_KEYS and LICENSE_KEY. */
  license: Record<string, string>;
  /** The admin's access token (JWT), valid in every process of the run. */
  token: string;
  /** The admin service account's API key. */
  apiKey: string;
}

/** One run of one configuration on a fresh process. */
async function measure({ databaseUrl, license, token, apiKey }: Setup, configuration: Configuration, run: number): Promise<RunResult> {
  const spec = CONFIGURATIONS[configuration];
  const name = `${spec.label} (run ${run})`;
  log(`${name}: starting one APP_ROLE=all process`);
  const service = await services.start(
    `service (${configuration})`,
    { ...serviceEnv(credentials, databaseUrl, 'all'), ...license, ...spec.env },
    settings.readyTimeoutMs,
  );
  try {
    organizationId = await raiseRateLimit(service.withToken(token), BUDGET);
    const client = service.withToken(spec.bearer === 'key' ? apiKey : token);
    const probes = await awaitPolicy(client, spec.limited);

    const call = async () => check(await client.request('GET', PATH), spec.limited);
    log(`${name}: warming up with ${settings.warmupRequests} requests`);
    const warmup = await runLoad(settings.clients, settings.warmupRequests, call, interrupted.signal);
    reportErrors(`${name} warm-up`, warmup);
    log(`${name}: ${settings.requests} requests, ${settings.clients} clients`);
    const result = await runLoad(settings.clients, settings.requests, call, interrupted.signal);

    const counted = spec.limited ? await countedHits(client) : null;
    const failures = configuration === 'redis' ? await storageFailures(service) : null;
    services.assertAlive();
    const sent =
      1 + probes + warmup.latencies.length + warmup.errors + result.latencies.length + result.errors + (counted === null ? 0 : 1);
    return { configuration, run, row: loadRow(name, result), warmupErrors: warmup.errors, counted, sent, storageFailures: failures };
  } finally {
    await services.stopAll();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

/** Per configuration, the run with the higher req/s. */
function best(results: RunResult[]): Record<Configuration, RunResult> {
  const pick = (c: Configuration) =>
    results.filter((r) => r.configuration === c).reduce((a, b) => (b.row.throughput > a.row.throughput ? b : a));
  return { off: pick('off'), memory: pick('memory'), key: pick('key'), redis: pick('redis') };
}

/** Positive: fewer req/s than the baseline. */
function throughputOverhead(x: Row, base: Row): number {
  return ((base.throughput - x.throughput) / base.throughput) * 100;
}

/** Positive: a higher p99 than the baseline. */
function p99Overhead(x: Row, base: Row): number {
  return ((x.p99 - base.p99) / base.p99) * 100;
}

/** `  <label>  req/s ±x %   p99 ±y %` against the baseline. */
function overheadLine(label: string, x: Row, base: Row): string {
  return `  ${label.padEnd(15)} req/s ${signed(throughputOverhead(x, base)).padStart(8)}   p99 ${signed(p99Overhead(x, base)).padStart(8)}`;
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : '−'}${fixed(Math.abs(value), 1)} %`;
}

function printReport(results: RunResult[]): void {
  const chosen = best(results);
  const off = chosen.off.row;
  const names = { scenario: 'configuration', throughput: 'req/s' };
  const redisOverhead = throughputOverhead(chosen.redis.row, off);
  const keyOverhead = throughputOverhead(chosen.key.row, chosen.memory.row);
  const out: string[] = [
    '',
    machineLine('Rate-limit and API key overhead benchmark'),
    '',
    `GET ${PATH} as the admin (JWT; in the key runs, an admin service account's API key), ${settings.clients} clients, ` +
      `${settings.requests} measured requests per run after ${settings.warmupRequests} warm-up requests;`,
    `one freshly started APP_ROLE=all process per run, one database; run order: ${ORDER.join(', ')}.`,
    '',
    'Every run:',
    ...formatRows(
      results.map((r) => r.row),
      'requests',
      names,
    ),
    '',
    'Per configuration, the better of its two runs (the one with the higher req/s; p50/p99 from that same run):',
    ...formatRows(
      (['off', 'memory', 'key', 'redis'] as const).map((c) => ({ ...chosen[c].row, scenario: CONFIGURATIONS[c].label })),
      'requests',
      names,
    ),
    '',
    'Overhead vs throttling off (better runs; positive = worse):',
    ...(['memory', 'redis'] as const).map((c) => overheadLine(CONFIGURATIONS[c].label, chosen[c].row, off)),
    '',
    'API key vs JWT, both with memory storage (better runs; positive = worse):',
    overheadLine('API key', chosen.key.row, chosen.memory.row),
    '',
    'Sanity checks (a window is 60 s from its first hit; in Redis it spans processes):',
    `  every counted response was 200 with RateLimit-Policy ${EXPECTED_POLICY} (memory, key, Redis) or without it (off)` +
      ` → ${verdict(results.every((r) => r.row.errors === 0 && r.warmupErrors === 0))}`,
    ...results
      .filter((r) => r.counted !== null)
      .map(
        (r) =>
          `  ${r.row.scenario}: ${r.counted} hits counted in the organization's current window ` +
          `(this process answered ${r.sent})` +
          (r.storageFailures === null ? '' : `, ${r.storageFailures} Redis failures (counted in memory)`),
      ),
    '',
    'Targets:',
    `  Redis overhead vs off < ${TARGET_REDIS_OVERHEAD_PERCENT} % (req/s) → ${signed(redisOverhead)} ` +
      `${verdict(redisOverhead < TARGET_REDIS_OVERHEAD_PERCENT)}`,
    `  API key overhead vs JWT ≤ ${TARGET_KEY_OVERHEAD_PERCENT} % (req/s) → ${signed(keyOverhead)} ` +
      `${verdict(keyOverhead <= TARGET_KEY_OVERHEAD_PERCENT)}`,
    '',
  ];
  process.stdout.write(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases, async () => {
  if (organizationId) await deleteRedisCounters(organizationId);
});

/** The organization's counters expire on their own within the window; deleted so the run leaves nothing behind. */
async function deleteRedisCounters(organization: string): Promise<void> {
  const redis = new Redis(settings.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  try {
    await redis.connect();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `*org:${organization}*`, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    if (keys.length) await redis.del(...keys);
  } catch (error) {
    log(`could not delete the Redis counters of organization ${organization}: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
}

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const license = await throwawayLicense('enterprise', BUDGET);
  const databaseUrl = await databases.create('throttling');
  const setup: Setup = { databaseUrl, license, ...(await prepare(databaseUrl)) };

  const results: RunResult[] = [];
  const runs: Partial<Record<Configuration, number>> = {};
  for (const configuration of ORDER) {
    if (interrupted.signal.aborted) throw new Error('interrupted');
    const run = (runs[configuration] = (runs[configuration] ?? 0) + 1);
    results.push(await measure(setup, configuration, run));
  }
  printReport(results);

  const errors = results.reduce((sum, r) => sum + r.row.errors + r.warmupErrors, 0);
  if (errors) throw new Error(`${errors} request(s) failed (non-200 or wrong RateLimit-Policy); see above`);
  const failures = results.reduce((sum, r) => sum + (r.storageFailures ?? 0), 0);
  if (failures) throw new Error(`${failures} request(s) were counted in memory because Redis failed: the Redis figures do not count`);
});
