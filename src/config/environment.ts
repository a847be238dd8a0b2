import { isIP } from 'node:net';
import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength, validateSync } from 'class-validator';

/** The roles SAML may give new users (the users' roles; config imports nothing of the app). */
export const SAML_ROLES = ['admin', 'member', 'viewer'] as const;

/**
 * Every environment variable the service reads, with its default. docs/reference/configuration.md
 * is generated from this class (`npm run docs:reference`); `loadConfig` validates it once at boot.
 */
export class Environment {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV = 'development';

  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /** Loopback only unless set: the Dockerfile and docker-compose.yml set 0.0.0.0. */
  @IsString()
  HOST = '127.0.0.1';

  @IsIn(['api', 'worker', 'all'])
  APP_ROLE = 'all';

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL?: string;

  /**
   * A streaming replica of DATABASE_URL's database, same schema: the history lists (executions,
   * runs, trigger events, webhook deliveries) read from it, as far behind as it lags (see
   * docs/operating.md, read replica). Never written to nor migrated; needs DATABASE_URL.
   */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_READ_URL must be a postgres:// URL' })
  DATABASE_READ_URL?: string;

  /**
   * The owner of the schema, for the migrations: set, they run as this role, which then hands
   * the service's role (DATABASE_URL's) every table but the audit log's, and on those only what
   * the service needs (see docs/operating.md, database roles). Unset, the service's role runs
   * them and owns everything, the audit log included.
   */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_MIGRATION_URL must be a postgres:// URL' })
  DATABASE_MIGRATION_URL?: string;

  @IsString()
  DATA_DIR = './.data';

  @IsInt()
  @Min(1)
  @Max(200)
  DB_POOL_SIZE = 10;

  /**
   * Statements each database connection keeps prepared (parsed and planned once, not per call);
   * 0 sends every statement unnamed, as a pooler in transaction mode needs (PgBouncer before 1.21).
   */
  @IsInt()
  @Min(0)
  @Max(1000)
  DB_STATEMENT_CACHE = 100;

  /** Seconds between the maintenance chore's passes over the hot tables (vacuum, autovacuum settings); 0 turns it off. */
  @IsInt()
  @Min(0)
  @Max(3600)
  DB_VACUUM_INTERVAL_SECONDS = 60;

  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be a redis:// URL' })
  REDIS_URL?: string;

  /** How long a rate-limit counter may take in Redis before it is counted in the process's memory instead. */
  @IsInt()
  @Min(50)
  @Max(60_000)
  REDIS_COMMAND_TIMEOUT_MS = 1000;

  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'JWT_SECRET must be at least 32 bytes' })
  JWT_SECRET?: string;

  @IsOptional()
  @Matches(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, { message: 'SECRETS_KEY must be 32 bytes, as 64 hex digits or base64' })
  SECRETS_KEY?: string;

  /**
   * The key of the audit log's hash chain (HMAC-SHA256), 32 bytes as hex or base64; unset, one
   * derived from SECRETS_KEY. Kept out of the database, so a chain rewritten there fails verify.
   */
  @IsOptional()
  @Matches(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, { message: 'AUDIT_CHAIN_KEY must be 32 bytes, as 64 hex digits or base64' })
  AUDIT_CHAIN_KEY?: string;

  @IsString()
  OUTBOUND_ALLOWLIST = '';

  /** Days the webhook delivery log keeps messages and their attempts (they leave with their week's partition, within a week after). */
  @IsInt()
  @Min(1)
  @Max(365)
  WEBHOOK_LOG_RETENTION_DAYS = 30;

  /** Requests per minute one sender address may make to inbound webhook triggers (/api/hooks). */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  HOOK_RATE_LIMIT_PER_SOURCE = 600;

  /** Requests per minute one inbound webhook trigger accepts. */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  HOOK_RATE_LIMIT_PER_TRIGGER = 1200;

  /**
   * Operator overrides of what one organization may hold of the shared machinery at once,
   * whatever its tier (unset: the tier's share, see docs/concepts.md, fair shares): expression
   * evaluations per process, and executions, workflow runs and webhook deliveries in flight
   * across the installation; and how many schedules it may have.
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(64)
  ORG_MAX_EXPRESSIONS?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  ORG_MAX_EXECUTIONS?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  ORG_MAX_RUNS?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  ORG_MAX_DELIVERIES?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  ORG_MAX_SCHEDULES?: number;

  /** Days the requests inbound webhook triggers received are kept (their events list and replay). */
  @IsInt()
  @Min(1)
  @Max(365)
  TRIGGER_EVENT_RETENTION_DAYS = 30;

  /**
   * Days executions and runs are kept at most: the cap of every organization's retention (its
   * own setting, or its tier's default). Older ones go with their week's partition, within a week after.
   */
  @IsInt()
  @Min(1)
  @Max(3650)
  HISTORY_RETENTION_DAYS = 90;

  /**
   * Days audit events are kept at most: an enterprise organization may choose fewer (30 at
   * least); every other organization keeps them this long. Older ones are purged every hour.
   */
  @IsInt()
  @Min(30)
  @Max(3650)
  AUDIT_RETENTION_DAYS = 3650;

  /** Seconds an event no wait step was waiting for is kept, for a wait that begins just after it. */
  @IsInt()
  @Min(0)
  @Max(86_400)
  WORKFLOW_EVENT_KEEP_SECONDS = 300;

  /** Seconds a tools/call at /api/mcp waits for its run or execution before it answers with its id and status. */
  @IsInt()
  @Min(0)
  @Max(120)
  MCP_WAIT_SECONDS = 30;

  /**
   * Seconds a live stream (a run's or an execution's events) stays open at most: then it ends
   * with `event: reconnect` and its client opens it again with its Last-Event-ID.
   */
  @IsInt()
  @Min(1)
  @Max(86_400)
  STREAM_MAX_SECONDS = 3600;

  /** Days of nothing but failed deliveries after which an endpoint is disabled. */
  @IsInt()
  @Min(1)
  @Max(30)
  WEBHOOK_DISABLE_AFTER_DAYS = 5;

  /** The bearer token Prometheus sends to GET /metrics; unset, /metrics answers 404. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'METRICS_TOKEN must be at least 16 characters' })
  METRICS_TOKEN?: string;

  @IsString()
  JWT_ISSUER = 'platform';

  @IsString()
  JWT_AUDIENCE = 'platform-api';

  @IsInt()
  @Min(60)
  @Max(86400)
  JWT_ACCESS_TTL_SECONDS = 900;

  @IsInt()
  @Min(300)
  REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

  @IsEmail({ require_tld: false })
  ADMIN_EMAIL = 'admin@platform.local';

  @IsOptional()
  @IsString()
  @MinLength(12, { message: 'ADMIN_PASSWORD must be at least 12 characters' })
  ADMIN_PASSWORD?: string;

  @IsInt()
  @Min(1)
  LOGIN_LIMIT_PER_IP = 30;

  @IsInt()
  @Min(1)
  LOGIN_LIMIT_PER_EMAIL = 10;

  @IsInt()
  @Min(1)
  LOGIN_LIMIT_WINDOW_SECONDS = 60;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /**
   * Which peers are proxies whose X-Forwarded-For is believed: `false` (none), a hop count
   * (`1`: the one proxy in front), or a comma-separated list of their addresses and CIDRs
   * (and Express's `loopback`, `linklocal`, `uniquelocal`). See trustProxyProblem.
   */
  @IsString()
  TRUST_PROXY = 'false';

  @IsInt()
  @Min(0)
  SHUTDOWN_GRACE_MS = 10000;

  /**
   * The first part of that grace period on an API process: /health/ready answers 503 so load
   * balancers stop sending, while requests that still come are served. Less than SHUTDOWN_GRACE_MS.
   */
  @IsInt()
  @Min(0)
  SHUTDOWN_DRAIN_MS = 5000;

  @IsInt()
  @Min(1)
  @Max(64)
  WORKER_CONCURRENCY = 4;

  /**
   * Worker threads that evaluate tenant expressions; unset: one per core (at most 4) and one
   * more. By its tier one organization holds at most the cores less one of them; never all of
   * them (ORG_MAX_EXPRESSIONS, which may raise the former, is capped below the count).
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(64)
  EXPRESSION_THREADS?: number;

  /**
   * `threads` (the default): tenant expressions run in the sandbox's worker threads. `inline`
   * evaluates them on the calling thread with the same in-thread bounds but no kill: only for
   * comparing in the benchmarks; refused in production.
   */
  @IsIn(['threads', 'inline'])
  EXPRESSION_SANDBOX = 'threads';

  /** Longest one evaluation of a tenant expression may take (ms), whatever the step's timeout. */
  @IsInt()
  @Min(100)
  @Max(60000)
  EXPRESSION_TIMEOUT_MS = 1000;

  /** Heap of each expression thread (MB); an expression that needs more ends as EXPRESSION_FAILED. */
  @IsInt()
  @Min(64)
  @Max(4096)
  EXPRESSION_HEAP_MB = 128;

  @Matches(/^([A-Za-z0-9+/]+={0,2})?(,[A-Za-z0-9+/]+={0,2})*$/, {
    message: 'LICENSE_PUBLIC_KEYS must be comma-separated base64 (SPKI DER)',
  })
  LICENSE_PUBLIC_KEYS = '';

  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, { message: 'LICENSE_KEY must be a compact JWS' })
  LICENSE_KEY?: string;

  @Transform(({ value }) => !(value === false || value === 'false' || value === '0'))
  RATE_LIMIT_ENABLED = true;

  @IsOptional()
  @Matches(/^https?:\/\/[^/]+(\/.*[^/])?$/, { message: 'PUBLIC_URL must be an http(s) URL without a trailing slash' })
  PUBLIC_URL?: string;

  @IsOptional()
  @IsString()
  SAML_IDP_ENTITY_ID?: string;

  @IsOptional()
  @IsString()
  SAML_IDP_SSO_URL?: string;

  @IsOptional()
  @IsString()
  SAML_IDP_CERTIFICATE?: string;

  @IsIn(SAML_ROLES)
  SAML_DEFAULT_ROLE = 'viewer';

  @Transform(({ value }) => value === true || value === 'true' || value === '1')
  SAML_ENFORCED = false;

  /**
   * Trial mode, to try everything on one machine: for 30 days from the installation's first start
   * with it, every organization has the enterprise tier's features and outbound calls may reach
   * loopback and private addresses; then what the license allows. Refused when NODE_ENV=production.
   */
  @Transform(({ value }) =>
    value === true || value === 'true' || value === '1' ? true : value === false || value === 'false' || value === '0' ? false : value,
  )
  @IsBoolean({ message: 'TRIAL must be true or false' })
  TRIAL = false;
}

const NUMERIC = new Set([
  'PORT',
  'DB_POOL_SIZE',
  'DB_STATEMENT_CACHE',
  'DB_VACUUM_INTERVAL_SECONDS',
  'REDIS_COMMAND_TIMEOUT_MS',
  'JWT_ACCESS_TTL_SECONDS',
  'REFRESH_TOKEN_TTL_SECONDS',
  'LOGIN_LIMIT_PER_IP',
  'LOGIN_LIMIT_PER_EMAIL',
  'LOGIN_LIMIT_WINDOW_SECONDS',
  'SHUTDOWN_GRACE_MS',
  'SHUTDOWN_DRAIN_MS',
  'WORKER_CONCURRENCY',
  'EXPRESSION_THREADS',
  'EXPRESSION_HEAP_MB',
  'EXPRESSION_TIMEOUT_MS',
  'WEBHOOK_LOG_RETENTION_DAYS',
  'WEBHOOK_DISABLE_AFTER_DAYS',
  'HOOK_RATE_LIMIT_PER_SOURCE',
  'HOOK_RATE_LIMIT_PER_TRIGGER',
  'TRIGGER_EVENT_RETENTION_DAYS',
  'HISTORY_RETENTION_DAYS',
  'AUDIT_RETENTION_DAYS',
  'WORKFLOW_EVENT_KEEP_SECONDS',
  'MCP_WAIT_SECONDS',
  'STREAM_MAX_SECONDS',
  'ORG_MAX_EXPRESSIONS',
  'ORG_MAX_EXECUTIONS',
  'ORG_MAX_RUNS',
  'ORG_MAX_DELIVERIES',
  'ORG_MAX_SCHEDULES',
]);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses and validates the environment; throws a ConfigError naming every bad variable. */
export function parseEnvironment(env: NodeJS.ProcessEnv): Environment {
  const known = Object.keys(new Environment()).concat(
    'DATABASE_URL',
    'DATABASE_READ_URL',
    'DATABASE_MIGRATION_URL',
    'REDIS_URL',
    'JWT_SECRET',
    'ADMIN_PASSWORD',
    'SECRETS_KEY',
    'AUDIT_CHAIN_KEY',
    'LICENSE_KEY',
  );
  const raw: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    if (value === undefined || value === '') continue;
    raw[key] = NUMERIC.has(key) && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  const parsed = plainToInstance(Environment, raw);
  const problems = validateSync(parsed, { forbidUnknownValues: false }).flatMap((e) =>
    Object.values(e.constraints ?? {}).map((message) => (message.startsWith(e.property) ? message : `${e.property}: ${message}`)),
  );
  if (parsed.NODE_ENV === 'production') {
    if (!parsed.DATABASE_URL) problems.push('DATABASE_URL is required when NODE_ENV=production');
    if (!parsed.JWT_SECRET) problems.push('JWT_SECRET (at least 32 bytes) is required when NODE_ENV=production');
    if (!parsed.SECRETS_KEY) problems.push('SECRETS_KEY (32 bytes, hex or base64) is required when NODE_ENV=production');
    if (parsed.EXPRESSION_SANDBOX === 'inline')
      problems.push('EXPRESSION_SANDBOX=inline (for benchmarks) is refused when NODE_ENV=production');
    if (parsed.TRIAL === true)
      problems.push('TRIAL=true (trial mode, to try the service on a laptop) is refused when NODE_ENV=production: unset TRIAL');
  }
  if (parsed.DATABASE_READ_URL && !parsed.DATABASE_URL) {
    problems.push('DATABASE_READ_URL needs DATABASE_URL: a read replica is of a PostgreSQL server, not of the embedded database');
  }
  if (parsed.DATABASE_MIGRATION_URL && !parsed.DATABASE_URL) {
    problems.push('DATABASE_MIGRATION_URL needs DATABASE_URL: the migration role is of a PostgreSQL server, not of the embedded database');
  }
  if (parsed.SHUTDOWN_DRAIN_MS >= parsed.SHUTDOWN_GRACE_MS) {
    problems.push('SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_GRACE_MS: the drain is the first part of the grace period');
  }
  const trustProblem = trustProxyProblem(String(parsed.TRUST_PROXY));
  if (trustProblem) problems.push(trustProblem);
  const samlVars = [parsed.SAML_IDP_ENTITY_ID, parsed.SAML_IDP_SSO_URL, parsed.SAML_IDP_CERTIFICATE];
  if (samlVars.some(Boolean) && !samlVars.every(Boolean)) {
    problems.push('SAML_IDP_ENTITY_ID, SAML_IDP_SSO_URL and SAML_IDP_CERTIFICATE go together: set all three or none');
  }
  if (parsed.JWT_SECRET && Buffer.byteLength(parsed.JWT_SECRET) < 32) {
    problems.push('JWT_SECRET must be at least 32 bytes');
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  - ${[...new Set(problems)].join('\n  - ')}`);
  return parsed;
}

const TRUST_KEYWORDS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY as Express takes it: false, a hop count, or the proxies' addresses. `true`
 * (every hop) is refused: it lets any client choose its own address with X-Forwarded-For.
 */
export function parseTrustProxy(value: string): false | number | string[] {
  const text = value.trim().toLowerCase();
  if (text === '' || text === 'false' || text === '0') return false;
  if (/^\d+$/.test(text)) return Number(text);
  return text.split(',').map((entry) => entry.trim());
}

function trustProxyProblem(value: string): string | null {
  if (value.trim().toLowerCase() === 'true') {
    return (
      'TRUST_PROXY=true is no longer accepted: it believes every X-Forwarded-For entry, so any client picks its own address. ' +
      'Set the number of proxies in front of the service (TRUST_PROXY=1) or their addresses (TRUST_PROXY=10.0.0.5,172.16.0.0/12)'
    );
  }
  const parsed = parseTrustProxy(value);
  if (!Array.isArray(parsed)) return null;
  const bad = parsed.filter((entry) => !TRUST_KEYWORDS.has(entry) && !isAddressOrCidr(entry));
  return bad.length ? `TRUST_PROXY: not a hop count, address or CIDR: ${bad.join(', ')}` : null;
}

function isAddressOrCidr(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
