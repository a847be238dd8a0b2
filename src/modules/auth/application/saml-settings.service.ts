import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { allows } from '../../../shared/outbound/address-policy';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { OrganizationsService } from '../../organizations/application/organizations.service';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { settingsFromMetadata } from '../domain/saml-metadata';
import {
  assertValidSettings,
  DEFAULT_ATTRIBUTES,
  SAML_FEATURE,
  SamlSettings,
  ServiceProvider,
  serviceProviderFor,
} from '../domain/saml-settings';
import { SamlStore } from '../domain/saml.store';

export interface SamlSettingsInput extends Partial<Omit<SamlSettings, 'attributes'>> {
  attributes?: Partial<SamlSettings['attributes']>;
  idpMetadataXml?: string;
}

/** An organization's settings and what its IdP must be told of us. */
export interface ConfiguredSaml {
  settings: SamlSettings;
  serviceProvider: ServiceProvider;
}

/** An organization's SAML settings (enterprise tier): set by its admins, or by the environment for the default organization. */
@Injectable()
export class SamlSettingsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Saml');

  constructor(
    private readonly config: AppConfig,
    private readonly store: SamlStore,
    private readonly organizations: OrganizationRepository,
    private readonly organizationsService: OrganizationsService,
    private readonly subscriptions: SubscriptionService,
    private readonly reconciler: JobReconciler,
    private readonly cls: ClsService,
    private readonly outbound: OutboundPolicy,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * Old AuthnRequest ids and codes are purged with the reconciler's chores; SAML settings from
   * the environment go to the default organization (compose deployments).
   */
  async onApplicationBootstrap(): Promise<void> {
    this.reconciler.addChore(() => this.store.purge());
    const fromEnv = this.config.samlFromEnv;
    if (!fromEnv) return;
    await this.cls.run(async () => {
      const organization = await this.organizations.findBySlug('default');
      if (!organization) return;
      const settings = this.normalize({
        idpEntityId: fromEnv.idpEntityId,
        idpSsoUrl: fromEnv.idpSsoUrl,
        idpCertificates: [fromEnv.idpCertificate],
        defaultRole: fromEnv.defaultRole,
        enforced: fromEnv.enforced,
      });
      await this.store.saveSettings(organization.id, settings);
      this.logger.log(`SAML for organization 'default' configured from the environment (IdP ${settings.idpEntityId})`);
    });
  }

  async settings(caller: Principal): Promise<ConfiguredSaml> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const settings = await this.store.settings(caller.organizationId);
    if (!settings) throw new DomainError('NOT_FOUND', 'SAML is not configured for this organization');
    return { settings, serviceProvider: serviceProviderFor(this.config.publicUrl, organization.slug) };
  }

  @Transactional()
  async configure(caller: Principal, input: SamlSettingsInput): Promise<ConfiguredSaml> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const settings = this.normalize(input);
    const before = await this.store.settings(organization.id);
    await this.store.saveSettings(organization.id, settings);
    await this.audit.record({
      organizationId: organization.id,
      action: 'saml.settings_updated',
      target: { type: 'saml_settings', id: organization.id, name: settings.idpEntityId },
      changes: before ? changedFields(before, settings) : { after: settings },
    });
    this.logger.log({ msg: 'SAML settings saved', organization: organization.slug, idp: settings.idpEntityId, by: caller.userId });
    return { settings, serviceProvider: serviceProviderFor(this.config.publicUrl, organization.slug) };
  }

  @Transactional()
  async remove(caller: Principal): Promise<void> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const before = await this.store.settings(caller.organizationId);
    if (!before || !(await this.store.deleteSettings(caller.organizationId)))
      throw new DomainError('NOT_FOUND', 'SAML is not configured for this organization');
    await this.audit.record({
      organizationId: caller.organizationId,
      action: 'saml.settings_deleted',
      target: { type: 'saml_settings', id: caller.organizationId, name: before.idpEntityId },
      changes: { before },
    });
  }

  private normalize(input: SamlSettingsInput): SamlSettings {
    const fromMetadata: Partial<SamlSettings> = input.idpMetadataXml ? settingsFromMetadata(input.idpMetadataXml) : {};
    const settings: SamlSettings = {
      idpEntityId: input.idpEntityId ?? fromMetadata.idpEntityId ?? '',
      idpSsoUrl: input.idpSsoUrl ?? fromMetadata.idpSsoUrl ?? '',
      idpCertificates: input.idpCertificates ?? fromMetadata.idpCertificates ?? [],
      attributes: { ...DEFAULT_ATTRIBUTES, ...input.attributes },
      roleMappings: input.roleMappings ?? [],
      defaultRole: input.defaultRole ?? 'viewer',
      wantResponseSigned: input.wantResponseSigned ?? false,
      allowedRedirects: input.allowedRedirects ?? [],
      enabled: input.enabled ?? true,
      enforced: input.enforced ?? false,
    };
    if (!settings.idpEntityId) {
      throw new DomainError('VALIDATION_FAILED', 'The SAML settings are not valid', [
        { path: 'idpEntityId', message: 'idpEntityId is required (or idpMetadataXml)' },
      ]);
    }
    assertValidSettings(settings, (host) => allows(this.outbound.allowList, { hostname: host, address: host }));
    return settings;
  }
}
