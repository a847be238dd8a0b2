import { randomUUID } from 'node:crypto';
import { DomainError } from '../../../shared/errors/domain-error';
import { isTier, Tier, TIER_HISTORY_RETENTION_DAYS, TIERS } from '../../licensing/domain/tiers';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export interface OrganizationProps {
  id: string;
  slug: string;
  name: string;
  tier: Tier;
  rateLimitPerMinute: number | null;
  /** Users the organization may have (operators set it, within the license's seats); null: no quota of its own. */
  seatQuota: number | null;
  /** Days its executions and runs are kept (operators set it, within HISTORY_RETENTION_DAYS); null: its tier's default. */
  historyRetentionDays: number | null;
  createdAt: Date;
}

/** Days an organization keeps its executions and runs: its own setting or its tier's default, within the instance's cap. */
export function historyRetentionDays(tier: Tier, own: number | null, capDays: number): number {
  return Math.min(own ?? TIER_HISTORY_RETENTION_DAYS[tier], capDays);
}

/** The tenant. Every resource row belongs to exactly one organization. */
export class Organization {
  private constructor(private props: OrganizationProps) {}

  static create(input: { slug: string; name: string; tier: Tier }): Organization {
    if (!SLUG_PATTERN.test(input.slug)) {
      throw new DomainError('VALIDATION_FAILED', `Invalid organization slug '${input.slug}'`, [
        { path: 'slug', message: 'slug must be lowercase letters, digits and dashes (1-63)' },
      ]);
    }
    if (!isTier(input.tier)) {
      throw new DomainError('VALIDATION_FAILED', `Unknown tier '${input.tier}'`, [
        { path: 'tier', message: `tier must be one of ${TIERS.join(', ')}` },
      ]);
    }
    return new Organization({ id: randomUUID(), ...input, rateLimitPerMinute: null, seatQuota: null, historyRetentionDays: null, createdAt: new Date() });
  }

  static rehydrate(props: OrganizationProps): Organization {
    return new Organization({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get slug() {
    return this.props.slug;
  }
  get name() {
    return this.props.name;
  }
  get tier() {
    return this.props.tier;
  }
  get rateLimitPerMinute() {
    return this.props.rateLimitPerMinute;
  }
  get seatQuota() {
    return this.props.seatQuota;
  }

  get historyRetentionDays() {
    return this.props.historyRetentionDays;
  }

  /** Days its executions and runs are kept: its own setting or its tier's default, within the instance's cap. */
  historyRetention(capDays: number): number {
    return historyRetentionDays(this.props.tier, this.props.historyRetentionDays, capDays);
  }

  setHistoryRetention(days: number | null): void {
    this.props = { ...this.props, historyRetentionDays: days };
  }

  setSeatQuota(seats: number | null): void {
    this.props = { ...this.props, seatQuota: seats };
  }
  get createdAt() {
    return this.props.createdAt;
  }

  rename(name: string): void {
    this.props = { ...this.props, name };
  }

  /** Assigned by operators, within the license (checked by the caller). */
  assignTier(tier: Tier): void {
    this.props = { ...this.props, tier };
  }

  /** Enterprise organizations' own requests per minute; null returns to the tier's default. */
  setRateLimit(perMinute: number | null): void {
    this.props = { ...this.props, rateLimitPerMinute: perMinute };
  }

  toProps(): OrganizationProps {
    return { ...this.props };
  }
}
