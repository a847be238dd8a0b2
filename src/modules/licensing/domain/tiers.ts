/**
 * The tiers, lowest first, and what each gives. Licensing is their one home: organizations,
 * the DTOs, the CLI and the vendor tool take them from here.
 */
export const TIERS = ['starter', 'team', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

/** What every organization gets without a valid license. */
export const UNLICENSED_TIER: Tier = 'starter';

export function isTier(value: unknown): value is Tier {
  return TIERS.includes(value as Tier);
}

/** Requests per minute each tier allows; enterprise organizations may set their own. */
export const TIER_RATE_LIMITS: Record<Tier, number> = { starter: 100, team: 500, enterprise: 2000 };
export const RATE_LIMIT_WINDOW_SECONDS = 60;

/**
 * What one organization of each tier may hold of the shared machinery at once, its fair share
 * (ORG_MAX_* set a count for every tier instead): in percent of one process's expression
 * threads (never all of them) and of a worker process's job slots for executions, workflow runs
 * and webhook deliveries (WORKER_CONCURRENCY times their batch: 64, 32 and 128 with the
 * default 4), so the rest stays free for other organizations; and how many schedules it may have.
 */
export const TIER_SHARES: Record<Tier, Record<'expressions' | 'executions' | 'runs' | 'deliveries' | 'schedules', number>> = {
  starter: { expressions: 50, executions: 75, runs: 75, deliveries: 75, schedules: 100 },
  team: { expressions: 75, executions: 80, runs: 80, deliveries: 80, schedules: 500 },
  enterprise: { expressions: 100, executions: 90, runs: 90, deliveries: 90, schedules: 5000 },
};

/**
 * Days each tier's executions and runs are kept by default; an organization may set its own,
 * and HISTORY_RETENTION_DAYS caps both.
 */
export const TIER_HISTORY_RETENTION_DAYS: Record<Tier, number> = { starter: 7, team: 30, enterprise: 90 };

/** Features each tier includes. */
export const TIER_FEATURES: Record<Tier, readonly string[]> = {
  starter: [],
  team: ['webhooks', 'audit.log'],
  enterprise: ['webhooks', 'sso.saml', 'sso.oidc', 'rate-limit.custom', 'api-keys.no-expiry', 'audit.log', 'audit.full'],
};

/**
 * How far back each tier reads its audit log (`audit.log`), in days; null: all of it. The
 * events are kept either way: `audit.full` (export and the chain's check) reads them all.
 */
export const TIER_AUDIT_VISIBLE_DAYS: Record<Tier, number | null> = { starter: 0, team: 90, enterprise: null };

export function tierRank(tier: Tier): number {
  return TIERS.indexOf(tier);
}

export function lowerTier(a: Tier, b: Tier): Tier {
  return tierRank(a) <= tierRank(b) ? a : b;
}

/** The lowest tier that includes the feature, for the message of FEATURE_NOT_AVAILABLE. */
export function tierIncluding(feature: string): Tier | undefined {
  return TIERS.find((tier) => TIER_FEATURES[tier].includes(feature));
}
