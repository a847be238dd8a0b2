import { hkdfSync, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Environment, parseEnvironment, parseTrustProxy, SAML_ROLES } from './environment';

export type AppRole = 'api' | 'worker' | 'all';

/** Every JSON request body, but those that carry an input: 1 MiB (413 beyond). Hooks' raw bodies too. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The bodies that carry an input (POST /api/agents/:id/execute, /api/workflows/:id/run): 2 MiB,
 * so that an input of 1 MiB fits with its envelope and JSON escapes. Also the largest value a
 * tenant expression may produce (a transform, a step's input, a run's output): what a run
 * accepts, a step can pass on whole.
 */
export const INPUT_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/**
 * The typed configuration every other part reads. Built once at boot from the environment;
 * it is the DI token too, so tests can provide their own.
 */
export class AppConfig {
  readonly production: boolean;
  readonly http: {
    port: number;
    host: string;
    trustProxy: false | number | string[];
    /** BODY_LIMIT_BYTES. */
    bodyLimitBytes: number;
    /** INPUT_BODY_LIMIT_BYTES: the bodies of POST /api/agents/:id/execute and /api/workflows/:id/run. */
    inputBodyLimitBytes: number;
    shutdownGraceMs: number;
    /** The first part of the grace period, on API processes: readiness off, requests still served. */
    shutdownDrainMs: number;
  };
  readonly role: AppRole;
  /** A worker process runs up to this many batches of a queue's jobs at once. */
  readonly workerConcurrency: number;
  /** The sandbox of tenant expressions: its threads and the heap of each; the machine's cores. */
  readonly expressions: { threads: number; cores: number; heapMb: number; timeLimitMs: number; inline: boolean };
  /**
   * DATABASE_URL, DATABASE_READ_URL (a replica the history lists read from), DATA_DIR (PGlite's
   * files), DB_POOL_SIZE, DB_STATEMENT_CACHE and DB_VACUUM_INTERVAL_SECONDS.
   */
  readonly database: {
    url?: string;
    readUrl?: string;
    /** DATABASE_MIGRATION_URL: the schema's owner, the migrations run as it. */
    migrationUrl?: string;
    dataDir: string;
    poolSize: number;
    statementCache: number;
    vacuumIntervalSeconds: number;
  };
  /** The Redis of the rate-limit counters, when REDIS_URL is set. */
  readonly redis?: { url: string; commandTimeoutMs: number };
  readonly jwt: { secret: string; issuer: string; audience: string; accessTtlSeconds: number; refreshTtlSeconds: number };
  readonly bootstrap: { adminEmail: string; adminPassword?: string };
  readonly loginLimits: { perIp: number; perEmail: number; windowSeconds: number };
  readonly logLevel: string;
  /** AES-256-GCM key for secrets at rest. */
  readonly secretsKey: Buffer;
  /** METRICS_TOKEN: the bearer token /metrics requires; unset, /metrics is off. */
  readonly metricsToken?: string;
  /** OUTBOUND_ALLOWLIST: hosts and CIDRs the SSRF guard lets through. */
  readonly outboundAllowList: string;
  /** WEBHOOK_LOG_RETENTION_DAYS and WEBHOOK_DISABLE_AFTER_DAYS. */
  readonly webhooks: { logRetentionDays: number; disableAfterDays: number };
  /** HOOK_RATE_LIMIT_PER_SOURCE and _PER_TRIGGER (per minute), TRIGGER_EVENT_RETENTION_DAYS. */
  readonly triggers: { perSourcePerMinute: number; perTriggerPerMinute: number; eventRetentionDays: number };
  /** HISTORY_RETENTION_DAYS: the most days any organization's executions and runs are kept. */
  readonly history: { retentionDays: number };
  /**
   * AUDIT_RETENTION_DAYS: the most days any organization's audit events are kept; the chain's
   * key: AUDIT_CHAIN_KEY, or derived from SECRETS_KEY (HKDF-SHA256), so a default install is keyed too.
   */
  readonly audit: { retentionDays: number; chainKey: Buffer };
  /** WORKFLOW_EVENT_KEEP_SECONDS: how long an event no wait took is kept for one. */
  readonly workflowEvents: { keepSeconds: number };
  /** MCP_WAIT_SECONDS: how long a tools/call at /api/mcp waits for its run or execution. */
  readonly mcp: { waitSeconds: number };
  /** STREAM_MAX_SECONDS: how long a live stream stays open at most. */
  readonly streams: { maxSeconds: number };
  /** ORG_MAX_*: the operator's overrides of every tier's fair share (unset: the tier's). */
  readonly shareOverrides: Partial<Record<'expressions' | 'executions' | 'runs' | 'deliveries' | 'schedules', number>>;
  /** Vendor public keys (base64 SPKI DER) licenses are verified against. */
  readonly licensePublicKeys: string[];
  /** A license to install at boot. */
  readonly licenseKey?: string;
  /** TRIAL=true: enterprise features and loopback targets for 30 days from the first start with it. */
  readonly trial: boolean;
  /** Tier rate limits on /api (off only for benchmarks). */
  readonly rateLimitEnabled: boolean;
  /** Where clients and identity providers reach the service (SAML entity ids and ACS URLs). */
  readonly publicUrl: string;
  /** SAML for the default organization from the environment (compose deployments). */
  readonly samlFromEnv?: {
    idpEntityId: string;
    idpSsoUrl: string;
    idpCertificate: string;
    defaultRole: (typeof SAML_ROLES)[number];
    enforced: boolean;
  };

  constructor(env: Environment) {
    this.production = env.NODE_ENV === 'production';
    this.http = {
      port: env.PORT,
      host: env.HOST,
      trustProxy: parseTrustProxy(env.TRUST_PROXY),
      bodyLimitBytes: BODY_LIMIT_BYTES,
      inputBodyLimitBytes: INPUT_BODY_LIMIT_BYTES,
      shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
      shutdownDrainMs: env.SHUTDOWN_DRAIN_MS,
    };
    this.role = env.APP_ROLE as AppRole;
    this.workerConcurrency = env.WORKER_CONCURRENCY;
    this.expressions = {
      threads: env.EXPRESSION_THREADS ?? Math.min(4, availableParallelism()) + 1,
      cores: availableParallelism(),
      heapMb: env.EXPRESSION_HEAP_MB,
      timeLimitMs: env.EXPRESSION_TIMEOUT_MS,
      inline: env.EXPRESSION_SANDBOX === 'inline',
    };
    const dataDir = resolve(env.DATA_DIR);
    this.database = {
      url: env.DATABASE_URL,
      readUrl: env.DATABASE_READ_URL,
      migrationUrl: env.DATABASE_MIGRATION_URL,
      dataDir,
      poolSize: env.DB_POOL_SIZE,
      statementCache: env.DB_STATEMENT_CACHE,
      vacuumIntervalSeconds: env.DB_VACUUM_INTERVAL_SECONDS,
    };
    this.redis = env.REDIS_URL ? { url: env.REDIS_URL, commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS } : undefined;
    this.jwt = {
      secret: env.JWT_SECRET ?? persistedSecret(dataDir, 'jwt-secret'),
      issuer: env.JWT_ISSUER,
      audience: env.JWT_AUDIENCE,
      accessTtlSeconds: env.JWT_ACCESS_TTL_SECONDS,
      refreshTtlSeconds: env.REFRESH_TOKEN_TTL_SECONDS,
    };
    this.bootstrap = { adminEmail: env.ADMIN_EMAIL.toLowerCase(), adminPassword: env.ADMIN_PASSWORD };
    this.loginLimits = {
      perIp: env.LOGIN_LIMIT_PER_IP,
      perEmail: env.LOGIN_LIMIT_PER_EMAIL,
      windowSeconds: env.LOGIN_LIMIT_WINDOW_SECONDS,
    };
    this.logLevel = env.LOG_LEVEL;
    const secretsKey = env.SECRETS_KEY ?? persistedSecret(dataDir, 'secrets-key', () => randomBytes(32).toString('hex'));
    this.secretsKey = Buffer.from(secretsKey, /^[0-9a-fA-F]{64}$/.test(secretsKey) ? 'hex' : 'base64');
    this.outboundAllowList = env.OUTBOUND_ALLOWLIST;
    this.webhooks = { logRetentionDays: env.WEBHOOK_LOG_RETENTION_DAYS, disableAfterDays: env.WEBHOOK_DISABLE_AFTER_DAYS };
    this.triggers = {
      perSourcePerMinute: env.HOOK_RATE_LIMIT_PER_SOURCE,
      perTriggerPerMinute: env.HOOK_RATE_LIMIT_PER_TRIGGER,
      eventRetentionDays: env.TRIGGER_EVENT_RETENTION_DAYS,
    };
    this.history = { retentionDays: env.HISTORY_RETENTION_DAYS };
    this.audit = {
      retentionDays: env.AUDIT_RETENTION_DAYS,
      chainKey: env.AUDIT_CHAIN_KEY
        ? Buffer.from(env.AUDIT_CHAIN_KEY, /^[0-9a-fA-F]{64}$/.test(env.AUDIT_CHAIN_KEY) ? 'hex' : 'base64')
        : Buffer.from(hkdfSync('sha256', this.secretsKey, Buffer.alloc(0), 'platform audit chain', 32)),
    };
    this.workflowEvents = { keepSeconds: env.WORKFLOW_EVENT_KEEP_SECONDS };
    this.mcp = { waitSeconds: env.MCP_WAIT_SECONDS };
    this.streams = { maxSeconds: env.STREAM_MAX_SECONDS };
    this.shareOverrides = Object.fromEntries(
      Object.entries({
        expressions: env.ORG_MAX_EXPRESSIONS,
        executions: env.ORG_MAX_EXECUTIONS,
        runs: env.ORG_MAX_RUNS,
        deliveries: env.ORG_MAX_DELIVERIES,
        schedules: env.ORG_MAX_SCHEDULES,
      }).filter(([, value]) => value !== undefined),
    );
    this.metricsToken = env.METRICS_TOKEN;
    this.licensePublicKeys = env.LICENSE_PUBLIC_KEYS.split(',').filter(Boolean);
    this.licenseKey = env.LICENSE_KEY;
    this.rateLimitEnabled = env.RATE_LIMIT_ENABLED;
    this.trial = env.TRIAL;
    this.publicUrl = env.PUBLIC_URL ?? `http://localhost:${env.PORT}`;
    if (env.SAML_IDP_ENTITY_ID && env.SAML_IDP_SSO_URL && env.SAML_IDP_CERTIFICATE) {
      this.samlFromEnv = {
        idpEntityId: env.SAML_IDP_ENTITY_ID,
        idpSsoUrl: env.SAML_IDP_SSO_URL,
        // PEM, or the PEM in base64 (one line, for .env files).
        idpCertificate: env.SAML_IDP_CERTIFICATE.includes('BEGIN CERTIFICATE')
          ? env.SAML_IDP_CERTIFICATE.replace(/\\n/g, '\n')
          : Buffer.from(env.SAML_IDP_CERTIFICATE, 'base64').toString('utf8'),
        defaultRole: env.SAML_DEFAULT_ROLE as (typeof SAML_ROLES)[number],
        enforced: env.SAML_ENFORCED,
      };
    }
  }

  /** Serves the API routes (a worker serves only health and metrics). */
  get runsApi(): boolean {
    return this.role !== 'worker';
  }

  /** Takes jobs off the queue. */
  get runsWorker(): boolean {
    return this.role !== 'api';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  return new AppConfig(parseEnvironment(env));
}

/**
 * Outside production a missing secret is generated once and kept in the data folder, so the
 * embedded default needs no configuration and survives restarts.
 */
function persistedSecret(dataDir: string, name: string, generate = () => randomBytes(48).toString('base64url')): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = generate();
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}
