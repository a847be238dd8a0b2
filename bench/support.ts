import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { generateLicenseKeyPair, issueLicense } from '../src/modules/licensing/application/license-issuer';
import { Tier } from '../src/modules/licensing/domain/tiers';

/**
 * Helpers for the benchmarks in this folder: service processes, scratch databases, a
 * keep-alive JSON client, a closed-loop load generator and latency statistics.
 */

/** A positive integer from the environment, or the fallback when unset. */
export function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return value;
}

/** Progress goes to stderr so stdout keeps only the results. */
export function log(message: string): void {
  process.stderr.write(`» ${message}\n`);
}

/** A port nobody listens on right now: bind to port 0, read it, let it go. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface JsonResponse {
  status: number;
  body: unknown;
  /** Response headers, names in lower case. */
  headers: http.IncomingHttpHeaders;
}

/** One connection pool for every request of the run, so sockets are reused. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** JSON over HTTP to one service process on 127.0.0.1. */
export class JsonClient {
  constructor(
    readonly port: number,
    readonly token?: string,
  ) {}

  withToken(token: string): JsonClient {
    return new JsonClient(this.port, token);
  }

  request(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<JsonResponse> {
    if (body === undefined) return this.send(method, path);
    return this.send(method, path, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  }

  /**
   * `body` sent as it is (the bytes a signature was computed over), with `headers` on top of
   * accept, content-length and the client's bearer token; the answer read as JSON when it is.
   */
  send(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    options: { body?: string | Buffer; headers?: http.OutgoingHttpHeaders } = {},
  ): Promise<JsonResponse> {
    const { body } = options;
    const headers: http.OutgoingHttpHeaders = { accept: 'application/json', ...options.headers };
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: this.port, method, path, headers, agent, timeout: 60_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: parseJson(Buffer.concat(chunks).toString('utf8')), headers: res.headers }),
        );
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

/** `body[key]` when the body is an object, else undefined. */
export function field(body: unknown, key: string): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
}

/** A response body cut to a log-friendly length. */
export function brief(body: unknown): string {
  return JSON.stringify(body ?? null).slice(0, 300);
}

export function unexpected(what: string, status: number, body: unknown): Error {
  return new Error(`${what} answered ${status}: ${brief(body)}`);
}

/** Drops idle keep-alive sockets so the process can exit. */
export function closeConnections(): void {
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------
// Service processes

/** Shared by every process of a run: tokens and encrypted secrets must be valid across them. */
export interface Credentials {
  JWT_SECRET: string;
  SECRETS_KEY: string;
  ADMIN_EMAIL: string;
  ADMIN_PASSWORD: string;
  /** What GET /metrics requires as its bearer token. */
  METRICS_TOKEN: string;
}

export function randomCredentials(): Credentials {
  return {
    JWT_SECRET: randomBytes(48).toString('base64url'),
    SECRETS_KEY: randomBytes(32).toString('hex'),
    ADMIN_EMAIL: 'bench@platform.local',
    ADMIN_PASSWORD: randomBytes(16).toString('hex'),
    METRICS_TOKEN: randomBytes(24).toString('hex'),
  };
}

/**
 * The environment of one service process on `databaseUrl`. The tier rate limit is off: the
 * engine benchmarks send far more than a starter organization's 100 requests a minute (the
 * throttling benchmark sets it per configuration).
 */
export function serviceEnv(credentials: Credentials, databaseUrl: string, role: 'all' | 'api' | 'worker'): Record<string, string> {
  return {
    ...credentials,
    DATABASE_URL: databaseUrl,
    APP_ROLE: role,
    HOST: '127.0.0.1',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    JWT_ACCESS_TTL_SECONDS: '86400',
    RATE_LIMIT_ENABLED: 'false',
  };
}

/** Logs in as the bootstrap admin and installs the transform plugin; answers the authenticated client. */
export async function loginAndInstallTransform(service: JsonClient, credentials: Credentials): Promise<JsonClient> {
  const login = await service.request('POST', '/api/auth/login', { email: credentials.ADMIN_EMAIL, password: credentials.ADMIN_PASSWORD });
  const token = field(login.body, 'accessToken');
  if (login.status !== 200 || typeof token !== 'string') throw unexpected('login', login.status, login.body);
  const client = service.withToken(token);

  const install = await client.request('POST', '/api/plugins/transform/install', {});
  if (install.status !== 201) throw unexpected('plugin install', install.status, install.body);
  return client;
}

/** A license for the service processes (LICENSE_PUBLIC_KEYS, LICENSE_KEY), signed by a throwaway vendor key for one day. */
export async function throwawayLicense(tier: Tier, maxRateLimitPerMinute?: number): Promise<Record<string, string>> {
  const vendor = generateLicenseKeyPair();
  const key = await issueLicense({ customer: 'bench', tier, seats: 1000, days: 1, maxRateLimitPerMinute }, vendor.privateKeyPem);
  return { LICENSE_PUBLIC_KEYS: vendor.publicKeyBase64, LICENSE_KEY: key };
}

/**
 * PATCH /api/subscription: the organization's own rate limit (enterprise tier, within the
 * license's maximum); answers the organization id.
 */
export async function raiseRateLimit(client: JsonClient, perMinute: number): Promise<string> {
  const res = await client.request('PATCH', '/api/subscription', { rateLimitPerMinute: perMinute });
  const rateLimit = field(res.body, 'rateLimit');
  const organizationId = field(res.body, 'organizationId');
  if (
    res.status !== 200 ||
    field(rateLimit, 'limit') !== perMinute ||
    field(res.body, 'tier') !== 'enterprise' ||
    typeof organizationId !== 'string'
  )
    throw unexpected(`PATCH /api/subscription {"rateLimitPerMinute": ${perMinute}}`, res.status, res.body);
  return organizationId;
}

/**
 * A workflow that finishes fast and offline: three transform.jsonata steps (a → b → c), input
 * {n: 5} → output 13 (BENCH_WORKFLOW_INPUT, BENCH_WORKFLOW_OUTPUT).
 */
export const BENCH_WORKFLOW = {
  name: 'bench',
  steps: [
    { id: 'a', action: 'transform.jsonata', with: { expression: '$ * 2' }, input: 'input.n' },
    { id: 'b', action: 'transform.jsonata', with: { expression: '$ + 1' }, input: 'steps.a.output', needs: ['a'] },
    { id: 'c', action: 'transform.jsonata', with: { expression: '$ + 2' }, input: 'steps.b.output', needs: ['b'] },
  ],
  output: 'steps.c.output',
};
export const BENCH_WORKFLOW_INPUT = { n: 5 };
export const BENCH_WORKFLOW_OUTPUT = 13;

/** POST /api/workflows; answers the new workflow's id and version. */
export async function createWorkflow(client: JsonClient, definition: object): Promise<{ id: string; version: number }> {
  const res = await client.request('POST', '/api/workflows', definition);
  const id = field(res.body, 'id');
  const version = field(res.body, 'version');
  if (res.status !== 201 || typeof id !== 'string' || typeof version !== 'number')
    throw unexpected('workflow creation', res.status, res.body);
  return { id, version };
}

interface Service {
  name: string;
  child: ChildProcess;
  stopping: boolean;
  exited: Promise<void>;
}

/** The service processes of the run: started, awaited until ready, and always stopped. */
export class Services {
  private readonly services: Service[] = [];
  private readonly crashes: string[] = [];
  private closed = false;

  constructor(
    private readonly entry: string,
    private readonly cwd: string,
  ) {}

  /** Spawns `node <entry>` with the environment given on top of ours; returns its HTTP client once ready. */
  async start(name: string, env: Record<string, string>, readyTimeoutMs: number): Promise<JsonClient> {
    const port = await freePort();
    if (this.closed) throw new Error(`not starting ${name}: shutting down`);
    // BENCH_CPU_PROFILE=<dir>: every service process writes a V8 CPU profile there when it exits.
    const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
    const child = spawn(process.execPath, [...profile, this.entry], {
      cwd: this.cwd,
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const service: Service = { name, child, stopping: false, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
    child.once('exit', (code, signal) => {
      if (!service.stopping) this.crashes.push(`${name} exited unexpectedly (code ${code}, signal ${signal})`);
    });
    this.services.push(service);
    const client = new JsonClient(port);
    await this.waitReady(service, client, readyTimeoutMs);
    return client;
  }

  /** The running processes' names and pids. */
  pids(): Array<{ name: string; pid: number }> {
    return this.services.flatMap((s) => (s.child.pid && s.child.exitCode === null ? [{ name: s.name, pid: s.child.pid }] : []));
  }

  /** Throws if any process died without being asked to. */
  assertAlive(): void {
    if (this.crashes.length) throw new Error(this.crashes.join('; '));
  }

  /** SIGTERM to every running process, SIGKILL to those still there after 10 s. */
  async stopAll(): Promise<void> {
    const running = this.services.splice(0);
    await Promise.all(running.map((service) => stop(service)));
  }

  /** Stops every process and refuses to start more. */
  close(): Promise<void> {
    this.closed = true;
    return this.stopAll();
  }

  private async waitReady(service: Service, client: JsonClient, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      this.assertAlive();
      const status = await client.request('GET', '/health/ready').then(
        (res) => res.status,
        () => 0,
      );
      if (status === 200) return;
      await sleep(200);
    }
    throw new Error(`${service.name} was not ready within ${timeoutMs / 1000} s`);
  }
}

async function stop(service: Service): Promise<void> {
  service.stopping = true;
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await service.exited;
  clearTimeout(kill);
}

// ---------------------------------------------------------------------------------------------
// Databases

/** Scratch databases on one PostgreSQL server, each dropped at the end. */
export class ScratchDatabases {
  private readonly names: string[] = [];
  private admin?: Client;
  private closed = false;

  constructor(
    private readonly serverUrl: string,
    private readonly prefix: string,
  ) {}

  /** Creates `<prefix>_<phase>` and answers its URL. */
  async create(phase: string): Promise<string> {
    const name = `${this.prefix}_${phase}`;
    if (this.closed) throw new Error(`not creating ${name}: shutting down`);
    const admin = await this.adminClient();
    // Listed first: a drop queued behind this create on the same connection still finds it.
    this.names.push(name);
    await admin.query(`CREATE DATABASE "${name}"`);
    const url = new URL(this.serverUrl);
    url.pathname = `/${name}`;
    return url.toString();
  }

  /** Terminates the connections to each database, then drops it; creates no more afterwards. */
  async dropAll(): Promise<void> {
    this.closed = true;
    if (!this.admin) return;
    for (const name of this.names.splice(0)) {
      await this.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
        name,
      ]);
      await this.admin.query(`DROP DATABASE IF EXISTS "${name}"`);
    }
    await this.admin.end();
    this.admin = undefined;
  }

  private async adminClient(): Promise<Client> {
    if (!this.admin) {
      this.admin = new Client({ connectionString: this.serverUrl });
      await this.admin.connect();
    }
    return this.admin;
  }
}

// ---------------------------------------------------------------------------------------------
// Load and statistics

export interface LoadResult {
  /** Latency of each successful call, ms. */
  latencies: number[];
  errors: number;
  /** The first few failures, described. */
  errorSamples: string[];
  elapsedMs: number;
}

/**
 * Closed loop: `clients` callers each send the next call as soon as their last one is answered,
 * until `total` calls are made or `signal` aborts. A call answers null on success or a description
 * of what was wrong.
 */
export async function runLoad(
  clients: number,
  total: number,
  call: () => Promise<string | null>,
  signal?: AbortSignal,
): Promise<LoadResult> {
  const result: LoadResult = { latencies: [], errors: 0, errorSamples: [], elapsedMs: 0 };
  let started = 0;
  const caller = async (): Promise<void> => {
    while (started < total && !signal?.aborted) {
      started++;
      const begin = performance.now();
      const problem = await call().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
      if (problem === null) {
        result.latencies.push(performance.now() - begin);
      } else {
        result.errors++;
        if (result.errorSamples.length < 5) result.errorSamples.push(problem);
      }
    }
  };
  const begin = performance.now();
  await Promise.all(Array.from({ length: Math.min(clients, total) }, caller));
  result.elapsedMs = performance.now() - begin;
  return result;
}

/**
 * The same load against several targets, interleaved in chunks of `chunk` calls (A, B, A, B,
 * ...), so that a noisy machine's slow and fast moments fall on every target alike.
 */
export async function runInterleaved(
  calls: Record<string, () => Promise<string | null>>,
  clients: number,
  total: number,
  chunk: number,
  signal?: AbortSignal,
): Promise<Record<string, LoadResult>> {
  const results: Record<string, LoadResult> = {};
  for (const name of Object.keys(calls)) results[name] = { latencies: [], errors: 0, errorSamples: [], elapsedMs: 0 };
  for (let done = 0; done < total && !signal?.aborted; done += chunk) {
    for (const [name, call] of Object.entries(calls)) {
      const part = await runLoad(clients, Math.min(chunk, total - done), call, signal);
      const into = results[name];
      into.latencies.push(...part.latencies);
      into.errors += part.errors;
      into.errorSamples.push(...part.errorSamples.slice(0, 5 - into.errorSamples.length));
      into.elapsedMs += part.elapsedMs;
    }
  }
  return results;
}

export interface Summary {
  p50: number;
  p99: number;
  mean: number;
}

/** Nearest-rank percentiles and the mean; NaN for an empty sample. */
export function summarize(values: number[]): Summary {
  if (!values.length) return { p50: NaN, p99: NaN, mean: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: rank(50), p99: rank(99), mean: sorted.reduce((sum, v) => sum + v, 0) / sorted.length };
}

// ---------------------------------------------------------------------------------------------
// Report

/** One line of a results table. */
export interface Row {
  scenario: string;
  count: number;
  errors: number;
  p50: number;
  p99: number;
  mean: number;
  throughput: number;
  wallSeconds: number;
}

/** A row from a load result: latency of the successful calls, throughput = successes per second. */
export function loadRow(scenario: string, result: LoadResult): Row {
  reportErrors(scenario, result);
  const seconds = result.elapsedMs / 1000;
  return {
    scenario,
    count: result.latencies.length + result.errors,
    errors: result.errors,
    ...summarize(result.latencies),
    throughput: result.latencies.length / seconds,
    wallSeconds: seconds,
  };
}

export function reportErrors(scenario: string, result: LoadResult): void {
  if (!result.errors) return;
  log(`${scenario}: ${result.errors} error(s), e.g.:\n    ${result.errorSamples.join('\n    ')}`);
}

/** `<title> — <n> CPU(s), <model>, Node <version>, WORKER_CONCURRENCY=<n>` */
export function machineLine(title: string): string {
  const cpus = os.cpus();
  return (
    `${title} — ${cpus.length} CPU(s), ${cpus[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}, ` +
    `WORKER_CONCURRENCY=${process.env.WORKER_CONCURRENCY || '4 (default)'}`
  );
}

/** The rows as aligned text lines under `countHeader` for the count column (and other names for the first and throughput columns). */
export function formatRows(rows: Row[], countHeader: string, names: { scenario?: string; throughput?: string } = {}): string[] {
  const header = [
    names.scenario ?? 'scenario',
    countHeader,
    'errors',
    'p50 ms',
    'p99 ms',
    'mean ms',
    names.throughput ?? 'throughput/s',
    'wall s',
  ];
  const cells = rows.map((r) => [
    r.scenario,
    String(r.count),
    String(r.errors),
    fixed(r.p50, 2),
    fixed(r.p99, 2),
    fixed(r.mean, 2),
    fixed(r.throughput, 1),
    fixed(r.wallSeconds, 2),
  ]);
  return alignedTable(header, cells);
}

/** `header` and `cells` as aligned text lines: the first `leftColumns` columns padded on the right, the rest (figures) on the left. */
export function alignedTable(header: string[], cells: string[][], leftColumns = 1): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i < leftColumns ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)];
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}

/**
 * Polls every 200 ms until every row of `table` whose `column` is `id` (the executions of an
 * agent, the runs of a workflow) has a final status; throws past `timeoutMs`, or when
 * `check` does (a service died, the run was interrupted).
 */
export async function waitForDrain(
  db: Client,
  what: { table: 'agent_executions' | 'workflow_runs'; column: 'agent_id' | 'workflow_id'; id: string },
  timeoutMs: number,
  check: () => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ total: number; succeeded: number; final: number }>(
      `SELECT count(*)::int AS total,
              count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
              count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'canceled', 'timed_out'))::int AS final
         FROM ${what.table} WHERE ${what.column} = $1`,
      [what.id],
    );
    const { total, succeeded, final } = rows[0];
    if (final === total) return;
    check();
    if (Date.now() > deadline) throw new Error(`after ${timeoutMs / 1000} s only ${succeeded} of ${total} succeeded`);
    await sleep(200);
  }
}

export type SandboxMode = 'inline' | 'threads';
export const SANDBOX_MODES: readonly SandboxMode[] = ['inline', 'threads'];

/**
 * One APP_ROLE=all process per expression-sandbox mode, each on a scratch database of its own,
 * prepared by `prepare` (which answers the call the load repeats): the two run side by side,
 * so their figures can be taken interleaved.
 */
export async function startSandboxPair(
  ctx: { databases: ScratchDatabases; services: Services; credentials: Credentials; readyTimeoutMs: number },
  prepare: (service: JsonClient) => Promise<() => Promise<string | null>>,
): Promise<Record<SandboxMode, () => Promise<string | null>>> {
  const calls = {} as Record<SandboxMode, () => Promise<string | null>>;
  for (const sandbox of SANDBOX_MODES) {
    const databaseUrl = await ctx.databases.create(`sync_${sandbox}`);
    log(`sync: starting one APP_ROLE=all process with EXPRESSION_SANDBOX=${sandbox}`);
    const env = { ...serviceEnv(ctx.credentials, databaseUrl, 'all'), EXPRESSION_SANDBOX: sandbox };
    calls[sandbox] = await prepare(await ctx.services.start(`service (${sandbox})`, env, ctx.readyTimeoutMs));
  }
  return calls;
}

/** What a drain of one agent's executions came to, from its rows (so worker boot time does not count). */
export interface DrainFigures {
  total: number;
  succeeded: number;
  /** Succeeded executions per second between the first start and the last finish. */
  throughput: number;
  /** Per-execution run time (started_at → finished_at), ms. */
  p50: number;
  p99: number;
  mean: number;
}

export async function drainFigures(db: Client, agentId: string): Promise<DrainFigures> {
  const { rows } = await db.query<DrainFigures>(
    `WITH runs AS (
       SELECT status, started_at, finished_at, extract(epoch FROM finished_at - started_at) * 1000 AS ms
         FROM agent_executions WHERE agent_id = $1)
     SELECT (SELECT count(*) FROM runs)::int AS total,
            count(*)::int AS succeeded,
            (count(*) / nullif(extract(epoch FROM max(finished_at) - min(started_at)), 0))::float8 AS throughput,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::float8 AS p50,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::float8 AS p99,
            avg(ms)::float8 AS mean
       FROM runs WHERE status = 'succeeded'`,
    [agentId],
  );
  return rows[0];
}

/** Stops every process and drops every database (and whatever `more` cleans); runs once however often it is called. */
export function cleanupOnce(services: Services, databases: ScratchDatabases, more?: () => Promise<void>): () => Promise<void> {
  let cleaning: Promise<void> | undefined;
  return () =>
    (cleaning ??= (async () => {
      await services.close();
      await databases.dropAll();
      closeConnections();
      await more?.();
    })());
}

/**
 * A benchmark's run: the build must be there; `body` runs; `cleanup` runs at the end, or on
 * SIGINT after `interrupted` is aborted (so the load stops). A failure prints one line and
 * sets the exit code.
 */
export function runBenchmark(entry: string, interrupted: AbortController, cleanup: () => Promise<void>, body: () => Promise<void>): void {
  const run = async () => {
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
    process.once('SIGINT', () => {
      log('interrupted: stopping the services and dropping the databases');
      interrupted.abort();
      void cleanup().finally(() => process.exit(130));
    });
    try {
      await body();
    } finally {
      await cleanup();
    }
  };
  run().catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
