import { AuditEntry, AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { Signals } from '../../../queue/signals';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { User } from '../../users/domain/user';
import { PreparedUser, UsersService } from '../../users/application/users.service';
import { LicensingService } from '../../licensing/application/licensing.service';
import { Tier, tierRank } from '../../licensing/domain/tiers';
import { Organization } from '../domain/organization';
import { OrganizationRepository } from '../domain/organization.repository';
import { AppConfig } from '../../../config/app-config';

export interface NewOrganization {
  slug: string;
  name: string;
  tier: Tier;
  admin: { email: string; password?: string; isOperator?: boolean };
}

export interface OrganizationChanges {
  name?: string;
  tier?: Tier;
  /** null removes the quota. */
  seatQuota?: number | null;
  /** null returns to the tier's default. */
  historyRetentionDays?: number | null;
}

/** Signal topic: an organization's tier or limit changed (rate limits re-read it). */
export const ORGANIZATION_CHANGED = 'organization.changed';

@Injectable()
export class OrganizationsService implements OnModuleInit {
  constructor(
    private readonly organizations: OrganizationRepository,
    private readonly users: UsersService,
    private readonly licensing: LicensingService,
    private readonly signals: Signals,
    private readonly config: AppConfig,
    private readonly audit: AuditTrail,
  ) {}

  onModuleInit(): void {
    // A license applied to an installation with one organization raises it to the licensed tier.
    this.licensing.onInstalled(async (claims) => {
      if ((await this.organizations.count()) !== 1) return;
      const [only] = (await this.organizations.list({ limit: 1 })).data;
      if (only.tier === claims.tier) return;
      only.assignTier(claims.tier);
      await this.organizations.update(only);
      this.signals.publish(ORGANIZATION_CHANGED, only.id);
    });
  }

  /** An organization and its first admin, together or not at all (the admin's password hashed before). */
  async create(input: NewOrganization): Promise<{ organization: Organization; admin: User }> {
    return this.insert(input, await this.users.prepare({ ...input.admin, role: 'admin' }));
  }

  @Transactional()
  private async insert(input: NewOrganization, admin: PreparedUser): Promise<{ organization: Organization; admin: User }> {
    await this.assertLicensed(input.tier);
    const organization = Organization.create({ slug: input.slug, name: input.name, tier: input.tier });
    await this.organizations.insert(organization);
    return { organization, admin: await this.users.createPrepared(organization.id, admin) };
  }

  /** Operators rename an organization or assign its tier, up to the licensed tier. */
  @Transactional()
  async change(id: string, changes: OrganizationChanges): Promise<Organization> {
    const organization = await this.require(id);
    const before = described(organization);
    if (changes.tier !== undefined) {
      await this.assertLicensed(changes.tier);
      organization.assignTier(changes.tier);
    }
    if (changes.name !== undefined) organization.rename(changes.name);
    if (changes.seatQuota !== undefined) {
      const seats = (await this.licensing.state()).seats;
      if (changes.seatQuota !== null && seats !== null && changes.seatQuota > seats) {
        throw new DomainError('VALIDATION_FAILED', `The license allows ${seats} seats`, [
          { path: 'seatQuota', message: `seatQuota must not be greater than the license's ${seats} seats` },
        ]);
      }
      organization.setSeatQuota(changes.seatQuota);
    }
    if (changes.historyRetentionDays !== undefined) {
      const cap = this.config.history.retentionDays;
      if (changes.historyRetentionDays !== null && changes.historyRetentionDays > cap) {
        throw new DomainError('VALIDATION_FAILED', `This instance keeps executions and runs at most ${cap} days (HISTORY_RETENTION_DAYS)`, [
          { path: 'historyRetentionDays', message: `historyRetentionDays must not be greater than ${cap}` },
        ]);
      }
      organization.setHistoryRetention(changes.historyRetentionDays);
    }
    await this.organizations.update(organization);
    await this.recordChange(before, organization);
    this.signals.publish(ORGANIZATION_CHANGED, organization.id);
    return organization;
  }

  /** A new tier is the subscription's change; the rest, the organization's. */
  private async recordChange(before: ReturnType<typeof described>, organization: Organization): Promise<void> {
    const { tier: tierBefore, ...restBefore } = before;
    const { tier, ...rest } = described(organization);
    const target = { type: 'organization', id: organization.id, name: organization.slug };
    const entries: AuditEntry[] = [];
    if (tier !== tierBefore) entries.push({ organizationId: organization.id, action: 'subscription.updated', target, changes: { before: { tier: tierBefore }, after: { tier } } });
    const changes = changedFields(restBefore, rest);
    if (Object.keys(changes.after as object).length) entries.push({ organizationId: organization.id, action: 'organization.updated', target, changes });
    if (entries.length) await this.audit.record(...entries);
  }

  /** Enterprise admins set their own limit, within the license's maximum. */
  async setRateLimit(caller: Principal, perMinute: number): Promise<Organization> {
    const organization = await this.require(caller.organizationId);
    const license = await this.licensing.state();
    if (license.effectiveTier(organization.tier) !== 'enterprise') {
      throw new DomainError('FEATURE_NOT_AVAILABLE', 'Setting the rate limit is part of the enterprise tier');
    }
    const max = license.maxRateLimitPerMinute!;
    if (perMinute > max) {
      throw new DomainError('VALIDATION_FAILED', `The license allows at most ${max} requests per minute`, [
        { path: 'rateLimitPerMinute', message: `rateLimitPerMinute must not be greater than ${max}` },
      ]);
    }
    organization.setRateLimit(perMinute);
    await this.organizations.update(organization);
    this.signals.publish(ORGANIZATION_CHANGED, organization.id);
    return organization;
  }

  list(page: PageRequest): Promise<Page<Organization>> {
    return this.organizations.list(page);
  }

  async current(caller: Principal): Promise<Organization> {
    return this.require(caller.organizationId);
  }

  async require(id: string): Promise<Organization> {
    const organization = await this.organizations.findById(id);
    if (!organization) throw new DomainError('ORGANIZATION_NOT_FOUND', `Organization '${id}' was not found`);
    return organization;
  }

  private async assertLicensed(tier: Tier): Promise<void> {
    const license = await this.licensing.state();
    if (tierRank(tier) > tierRank(license.maxTier)) {
      throw new DomainError(
        'LICENSE_REQUIRED',
        license.valid
          ? `The license allows tiers up to ${license.maxTier}; '${tier}' needs a license for it`
          : `Without a valid license organizations are limited to starter; '${tier}' needs a license`,
      );
    }
  }

  hasAny(): Promise<boolean> {
    return this.organizations.exists();
  }
}

/** What an operator changes of an organization, as the audit log shows it. */
function described(organization: Organization) {
  return {
    name: organization.name,
    tier: organization.tier,
    seatQuota: organization.seatQuota,
    historyRetentionDays: organization.historyRetentionDays,
  };
}
