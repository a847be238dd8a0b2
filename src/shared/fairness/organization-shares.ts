import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';

/** The shared machinery an organization draws on, and its schedules. */
export const SHARED_RESOURCES = ['expressions', 'executions', 'runs', 'deliveries', 'schedules'] as const;
export type SharedResource = (typeof SHARED_RESOURCES)[number];

/**
 * What one organization may hold at once, in percent of one process's capacity for the first
 * four: `expressions` of the sandbox's threads (in each process), `executions`, `runs` and
 * `deliveries` of a worker process's job slots (WORKER_CONCURRENCY times their batch; each
 * worker counts its own); `schedules` is a count (how many it may have).
 */
export type Shares = Record<SharedResource, number>;

/** How organizations map to shares: set once at boot by the module that knows tiers. */
export interface SharePolicy {
  /** The organization's tier now (cached by the caller's side: it is asked for every job). */
  tierOf(organizationId: string): Promise<string>;
  /** The shares of each tier; `default` for a tier not listed. */
  byTier: Record<string, Shares> & { default: Shares };
}

/** A worker's slots for one queue, and what one organization may hold of them. */
export interface WorkerSlots {
  /** Jobs the worker works on at once. */
  capacity: number;
  /** Jobs one organization may hold at once, by its tier (`default` for a tier not listed). */
  limits: { default: number; tiers: Record<string, number> };
}

/** The window of the jobs counted for priorities. */
const WINDOW_MS = 10_000;
/** Jobs an organization sends before its next ones go one priority lower. */
const JOBS_PER_STEP = 16;
const MAX_STEPS = 10_000;

/** Before a policy is set (a unit spec, a tool): every organization may use everything. */
const UNSET: SharePolicy = {
  tierOf: () => Promise.resolve('default'),
  byTier: { default: { expressions: 100, executions: 100, runs: 100, deliveries: 100, schedules: 1_000_000 } },
};

/**
 * Fair shares of the machinery every organization uses: what one organization may hold at once
 * of each, by its tier, or what the operator set for every tier (ORG_MAX_*, counts rather than
 * percentages). The job queue caps an organization's jobs in flight with these (the rest of a
 * worker's slots stay free for the others), the expression sandbox its evaluations, the
 * schedules service its schedules.
 */
@Injectable()
export class OrganizationShares {
  private policy = UNSET;
  /** Jobs each organization sent from this process, in the current and the previous window. */
  private sent = new Map<string, number>();
  private sentBefore = new Map<string, number>();
  private windowEnds = 0;

  constructor(private readonly config: AppConfig) {}

  /** Called once at boot, before the queue starts, by the module that knows tiers. */
  use(policy: SharePolicy): void {
    this.policy = policy;
  }

  /** What an organization of `tier` may hold of `resource`, out of `capacity` (a count). */
  limitFor(tier: string, resource: SharedResource, capacity: number): number {
    const override = this.config.shareOverrides[resource];
    if (override !== undefined) return override;
    const share = (this.policy.byTier[tier] ?? this.policy.byTier.default)[resource];
    return resource === 'schedules' ? share : Math.max(1, Math.ceil((share * capacity) / 100));
  }

  /** What the organization may hold of `resource`, out of `capacity` (ignored for schedules). */
  async limit(organizationId: string, resource: SharedResource, capacity = 0): Promise<number> {
    return this.limitFor(await this.policy.tierOf(organizationId), resource, capacity);
  }

  /** The organization's group on the job queue: its id and tier (the queue caps a group by its tier). */
  async group(organizationId: string): Promise<{ id: string; tier: string }> {
    return { id: organizationId, tier: await this.policy.tierOf(organizationId) };
  }

  /**
   * The priority of a job the organization sends now: 0 for an organization that sent little
   * lately, one lower for every JOBS_PER_STEP it sent in the last 10 to 20 s (in this process).
   * Workers take higher priorities first, so another organization's single job is taken before
   * the backlog one organization just queued, not after it; within an organization, the order
   * stays (roughly) first come, first served.
   */
  priority(organizationId: string, jobs = 1, now = Date.now()): number {
    if (now >= this.windowEnds) {
      this.sentBefore = now - this.windowEnds < WINDOW_MS ? this.sent : new Map();
      this.sent = new Map();
      this.windowEnds = now + WINDOW_MS;
    }
    const before = (this.sent.get(organizationId) ?? 0) + (this.sentBefore.get(organizationId) ?? 0);
    this.sent.set(organizationId, (this.sent.get(organizationId) ?? 0) + jobs);
    const steps = Math.min(MAX_STEPS, Math.floor(before / JOBS_PER_STEP));
    return steps === 0 ? 0 : -steps;
  }

  /**
   * A worker's slots for a queue of `resource` jobs and each organization's cap on them, from
   * `base` (its WORKER_CONCURRENCY batches). Room is added beyond the base so that the top
   * tier's share of the whole is the base (72 slots for a base of 64 at 90 %): an organization
   * of the top tier alone works as many jobs at once as a worker without shares would, and the
   * slots beyond its share stay free for the other organizations' jobs. With the operator's
   * count (ORG_MAX_*) the slots are the base.
   */
  workerSlots(resource: 'executions' | 'runs' | 'deliveries', base: number): WorkerSlots {
    const top = Math.max(...Object.values(this.policy.byTier).map((shares) => shares[resource]));
    const unchanged = this.config.shareOverrides[resource] !== undefined || top >= 100;
    const capacity = unchanged ? base : Math.ceil((base * 100) / top);
    const tiers = Object.fromEntries(Object.keys(this.policy.byTier).map((tier) => [tier, this.limitFor(tier, resource, capacity)]));
    return { capacity, limits: { default: this.limitFor('default', resource, capacity), tiers } };
  }
}
