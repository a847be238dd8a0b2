import { Injectable } from '@nestjs/common';
import { Signals } from '../../../queue/signals';
import { OrganizationShares } from '../../../shared/fairness/organization-shares';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { SharedReads } from '../../../shared/caching/shared-reads';
import { LICENSE_CHANGED, LicensingService } from '../../licensing/application/licensing.service';
import { LicenseKeySource, LicenseStatus } from '../../licensing/domain/license';
import {
  RATE_LIMIT_WINDOW_SECONDS,
  Tier,
  TIER_FEATURES,
  TIER_RATE_LIMITS,
  TIER_SHARES,
  tierIncluding,
  UNLICENSED_TIER,
} from '../../licensing/domain/tiers';
import { UsersService } from '../../users/application/users.service';
import { ORGANIZATION_CHANGED, OrganizationsService } from './organizations.service';

/** How long a process trusts an organization's limit; changes anywhere reach it by signal sooner. */
const CACHE_MS = 5_000;

export interface RateLimit {
  tier: Tier;
  limit: number;
  windowSeconds: number;
}

export interface Subscription {
  organizationId: string;
  /** The tier in force: the assigned one, within the license. */
  tier: Tier;
  assignedTier: Tier;
  rateLimit: RateLimit;
  features: readonly string[];
  seats: Seats;
  license: {
    status: LicenseStatus;
    customer: string | null;
    tier: Tier | null;
    expiresAt: string | null;
    verifiedBy: LicenseKeySource | null;
  };
  warnings: string[];
}

export interface Seats {
  /** Users across the installation: admins and instance operators only. */
  used?: number;
  /** The license's seats (null: no license, no limit): admins and instance operators only. */
  allowed?: number | null;
  /** The organization's users, and its seat quota (null: none of its own). */
  organization: { used: number; quota: number | null };
}

/** What an organization's tier and the installation's license give it: limits, features, seats. */
@Injectable()
export class SubscriptionService {
  private readonly limits = new SharedReads<string, RateLimit>(CACHE_MS, (organizationId) => this.resolve(organizationId));

  constructor(
    private readonly organizations: OrganizationsService,
    private readonly licensing: LicensingService,
    private readonly users: UsersService,
    signals: Signals,
    shares: OrganizationShares,
  ) {
    signals.on(ORGANIZATION_CHANGED, (id) => this.limits.forget(id));
    signals.on(LICENSE_CHANGED, () => this.limits.clear());
    // The shared machinery (queue, sandbox) shares itself by the tier in force, as cached here.
    shares.use({
      // An organization that cannot be read now (gone, the database away) gets the lowest share.
      tierOf: (organizationId) =>
        this.rateLimit(organizationId).then(
          (limit) => limit.tier,
          () => 'default',
        ),
      byTier: { ...TIER_SHARES, default: TIER_SHARES[UNLICENSED_TIER] },
    });
  }

  /** The organization's rate limit, cached for a few seconds (tier changes apply within the window). */
  rateLimit(organizationId: string): Promise<RateLimit> {
    return this.limits.get(organizationId);
  }

  /**
   * The caller's organization's subscription. The installation's seat figures (users of every
   * organization, the license's seats) are for its admins and instance operators; members and
   * viewers see their organization's.
   */
  async of(caller: Principal): Promise<Subscription> {
    const { organizationId } = caller;
    const installationWide = caller.role === 'admin' || caller.isOperator;
    const [organization, license, rateLimit, limits, usedHere, used] = await Promise.all([
      this.organizations.require(organizationId),
      this.licensing.state(),
      this.resolve(organizationId),
      this.licensing.seatLimits(organizationId),
      this.users.seatsTakenIn(organizationId),
      installationWide ? this.users.seatsTaken() : null,
    ]);
    const claims = license.license?.claims;
    const ofOrganization = { used: usedHere, quota: limits.organization };
    return {
      organizationId,
      tier: rateLimit.tier,
      assignedTier: organization.tier,
      rateLimit,
      features: TIER_FEATURES[rateLimit.tier],
      seats: used === null ? { organization: ofOrganization } : { used, allowed: license.seats, organization: ofOrganization },
      license: {
        status: license.status,
        customer: claims?.sub ?? null,
        tier: claims?.tier ?? null,
        expiresAt: claims ? new Date(claims.exp * 1000).toISOString() : null,
        verifiedBy: license.license?.verifiedBy ?? null,
      },
      warnings: license.warnings(),
    };
  }

  /** FEATURE_NOT_AVAILABLE, naming the tier that includes it, unless the organization's tier does. */
  async assertFeature(organizationId: string, feature: string): Promise<void> {
    const { tier } = await this.rateLimit(organizationId);
    if (TIER_FEATURES[tier].includes(feature)) return;
    throw new DomainError(
      'FEATURE_NOT_AVAILABLE',
      `'${feature}' needs the ${tierIncluding(feature) ?? 'a higher'} tier; this organization is on ${tier}`,
    );
  }

  private async resolve(organizationId: string): Promise<RateLimit> {
    const [organization, license] = await Promise.all([this.organizations.require(organizationId), this.licensing.state()]);
    const tier = license.effectiveTier(organization.tier);
    const limit = tier === 'enterprise' ? (organization.rateLimitPerMinute ?? TIER_RATE_LIMITS.enterprise) : TIER_RATE_LIMITS[tier];
    return { tier, limit, windowSeconds: RATE_LIMIT_WINDOW_SECONDS };
  }
}
