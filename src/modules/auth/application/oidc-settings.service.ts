import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { allows } from '../../../shared/outbound/address-policy';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { OrganizationsService } from '../../organizations/application/organizations.service';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import {
  assertValidOidcSettings,
  DEFAULT_CLAIMS,
  DEFAULT_SCOPES,
  OIDC_FEATURE,
  OidcClientEndpoints,
  oidcEndpointsFor,
  OidcSettings,
} from '../domain/oidc-settings';
import { OidcStore } from '../domain/oidc.store';
import { isProviderError, OidcProviders } from './oidc-providers';

export interface OidcSettingsInput extends Partial<Omit<OidcSettings, 'claims'>> {
  claims?: Partial<OidcSettings['claims']>;
  /** Omitted: the stored one is kept. */
  clientSecret?: string;
}

/** An organization's settings (never its client secret) and what its provider must be told of us. */
export interface ConfiguredOidc {
  settings: OidcSettings;
  clientSecretSet: true;
  client: OidcClientEndpoints;
}

/** An organization's OpenID Connect settings (enterprise tier), set by its admins. */
@Injectable()
export class OidcSettingsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Oidc');

  constructor(
    private readonly config: AppConfig,
    private readonly store: OidcStore,
    private readonly organizationsService: OrganizationsService,
    private readonly subscriptions: SubscriptionService,
    private readonly reconciler: JobReconciler,
    private readonly outbound: OutboundPolicy,
    private readonly providers: OidcProviders,
    private readonly audit: AuditTrail,
  ) {}

  /** Answered or expired sign-ins are purged with the reconciler's chores. */
  onApplicationBootstrap(): void {
    this.reconciler.addChore(() => this.store.purge());
  }

  async settings(caller: Principal): Promise<ConfiguredOidc> {
    await this.subscriptions.assertFeature(caller.organizationId, OIDC_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const stored = await this.store.settings(caller.organizationId);
    if (!stored) throw new DomainError('NOT_FOUND', 'OIDC is not configured for this organization');
    return { settings: stored.settings, clientSecretSet: true, client: oidcEndpointsFor(this.config.publicUrl, organization.slug) };
  }

  /**
   * Checks the settings, then the provider: its discovery document must be reachable (through
   * the outbound rules) and name the same issuer; else 400 VALIDATION_FAILED and nothing saved.
   */
  @Transactional()
  async configure(caller: Principal, input: OidcSettingsInput): Promise<ConfiguredOidc> {
    await this.subscriptions.assertFeature(caller.organizationId, OIDC_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const before = await this.store.settings(organization.id);
    const settings = this.normalize(input);
    const clientSecret = input.clientSecret ?? before?.clientSecret;
    if (!clientSecret) {
      throw new DomainError('VALIDATION_FAILED', 'The OIDC settings are not valid', [
        { path: 'clientSecret', message: 'clientSecret is required when none is stored yet' },
      ]);
    }
    await this.assertDiscoverable(organization.id, settings, clientSecret);
    await this.store.saveSettings(organization.id, settings, clientSecret);
    const secretChanged = !before || before.clientSecret !== clientSecret;
    // The secret itself never reaches the log: only whether it changed (the audit trail redacts it by name).
    const after = { ...settings, clientSecret: secretChanged ? 'changed' : undefined };
    await this.audit.record({
      organizationId: organization.id,
      action: 'oidc.settings_updated',
      target: { type: 'oidc_settings', id: organization.id, name: settings.issuer },
      changes: before ? changedFields({ ...before.settings, clientSecret: undefined }, after) : { after },
    });
    this.logger.log({ msg: 'OIDC settings saved', organization: organization.slug, issuer: settings.issuer, by: caller.userId });
    return { settings, clientSecretSet: true, client: oidcEndpointsFor(this.config.publicUrl, organization.slug) };
  }

  @Transactional()
  async remove(caller: Principal): Promise<void> {
    await this.subscriptions.assertFeature(caller.organizationId, OIDC_FEATURE);
    const before = await this.store.settings(caller.organizationId);
    if (!before || !(await this.store.deleteSettings(caller.organizationId)))
      throw new DomainError('NOT_FOUND', 'OIDC is not configured for this organization');
    this.providers.forget(caller.organizationId);
    await this.audit.record({
      organizationId: caller.organizationId,
      action: 'oidc.settings_deleted',
      target: { type: 'oidc_settings', id: caller.organizationId, name: before.settings.issuer },
      changes: { before: before.settings },
    });
  }

  private async assertDiscoverable(organizationId: string, settings: OidcSettings, clientSecret: string): Promise<void> {
    try {
      await this.providers.discover(organizationId, settings, clientSecret);
    } catch (error) {
      if (!isProviderError(error)) throw error;
      this.logger.warn({ msg: 'OIDC discovery failed', issuer: settings.issuer, reason: error.message });
      throw new DomainError('VALIDATION_FAILED', 'The OIDC settings are not valid', [
        { path: 'issuer', message: `the issuer's discovery document could not be used: ${error.message}` },
      ]);
    }
  }

  private normalize(input: OidcSettingsInput): OidcSettings {
    const settings: OidcSettings = {
      issuer: input.issuer ?? '',
      clientId: input.clientId ?? '',
      scopes: (input.scopes ?? DEFAULT_SCOPES).split(/\s+/).filter(Boolean).join(' '),
      claims: { ...DEFAULT_CLAIMS, ...definedOnly(input.claims ?? {}) },
      roleMappings: (input.roleMappings ?? []).map(({ value, role }) => ({ value, role })),
      defaultRole: input.defaultRole ?? 'viewer',
      allowedRedirects: input.allowedRedirects ?? [],
      allowUnverifiedEmail: input.allowUnverifiedEmail ?? false,
      enabled: input.enabled ?? true,
    };
    assertValidOidcSettings(settings, (host) => allows(this.outbound.allowList, { hostname: host, address: host }));
    return settings;
  }
}

/** The fields that were given (a request's DTO has the left-out ones as undefined). */
function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
