import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { allows } from '../../../shared/outbound/address-policy';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { OrganizationsService } from '../../organizations/application/organizations.service';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { MAX_METADATA_BYTES, settingsFromMetadata } from '../domain/saml-metadata';
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
  /** Where to fetch the IdP metadata from (through the SSRF guard), instead of idpMetadataXml. */
  idpMetadataUrl?: string;
}

const METADATA_FETCH_TIMEOUT_MS = 10_000;

/** An organization's settings and what its IdP must be told of us. */
export interface ConfiguredSaml {
  settings: SamlSettings;
  serviceProvider: ServiceProvider;
}

/** An organization's SAML settings (enterprise tier): set by its admins, or by the environment for the default organization. */
@Injectable()
export class SamlSettingsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Saml');
  private readonly http: OutboundHttp;

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
  ) {
    this.http = new OutboundHttp({ allowList: outbound.allowList });
  }

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
        idpSloUrl: null,
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

  async configure(caller: Principal, input: SamlSettingsInput): Promise<ConfiguredSaml> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    // Fetched before the transaction opens: no transaction waits on a tenant's URL.
    const idpMetadataXml = input.idpMetadataUrl ? await this.fetchMetadata(input.idpMetadataUrl) : input.idpMetadataXml;
    return this.save(caller, { ...input, idpMetadataXml });
  }

  @Transactional()
  private async save(caller: Principal, input: SamlSettingsInput): Promise<ConfiguredSaml> {
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

  /**
   * The IdP metadata at `url`, through the SSRF guard (the URL is the tenant's), at most
   * MAX_METADATA_BYTES, within METADATA_FETCH_TIMEOUT_MS. Any failure is the tenant's input
   * that does not work: 400 VALIDATION_FAILED naming idpMetadataUrl.
   */
  private async fetchMetadata(url: string): Promise<string> {
    const invalid = (message: string) =>
      new DomainError('VALIDATION_FAILED', 'The IdP metadata URL cannot be read', [{ path: 'idpMetadataUrl', message }]);
    try {
      const response = await this.http.request({
        method: 'GET',
        url,
        headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
        timeoutMs: METADATA_FETCH_TIMEOUT_MS,
        maxResponseBytes: MAX_METADATA_BYTES,
      });
      if (response.status !== 200) throw invalid(`the server answered ${response.status}`);
      return response.body.toString('utf8');
    } catch (error) {
      if (error instanceof OutboundError) throw invalid(error.message);
      throw error;
    }
  }

  private normalize(input: SamlSettingsInput): SamlSettings {
    const fromMetadata: Partial<SamlSettings> = input.idpMetadataXml
      ? settingsFromMetadata(input.idpMetadataXml, input.idpMetadataUrl ? 'idpMetadataUrl' : 'idpMetadataXml')
      : {};
    const settings: SamlSettings = {
      idpEntityId: input.idpEntityId ?? fromMetadata.idpEntityId ?? '',
      idpSsoUrl: input.idpSsoUrl ?? fromMetadata.idpSsoUrl ?? '',
      idpSloUrl: input.idpSloUrl ?? fromMetadata.idpSloUrl ?? null,
      idpCertificates: input.idpCertificates ?? fromMetadata.idpCertificates ?? [],
      attributes: { ...DEFAULT_ATTRIBUTES, ...input.attributes },
      roleMappings: input.roleMappings ?? [],
      defaultRole: input.defaultRole ?? 'viewer',
      wantResponseSigned: input.wantResponseSigned ?? false,
      wantAssertionsEncrypted: input.wantAssertionsEncrypted ?? false,
      allowIdpInitiated: input.allowIdpInitiated ?? false,
      allowedRedirects: input.allowedRedirects ?? [],
      enabled: input.enabled ?? true,
      enforced: input.enforced ?? false,
    };
    if (!settings.idpEntityId) {
      throw new DomainError('VALIDATION_FAILED', 'The SAML settings are not valid', [
        { path: 'idpEntityId', message: 'idpEntityId is required (or idpMetadataXml, or idpMetadataUrl)' },
      ]);
    }
    assertValidSettings(settings, (host) => allows(this.outbound.allowList, { hostname: host, address: host }));
    return settings;
  }
}
