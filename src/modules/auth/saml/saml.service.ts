import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Profile, SAML, SamlConfig, ValidateInResponseTo } from '@node-saml/passport-saml';
import { ClsService } from 'nestjs-cls';
import { AppConfig } from '../../../config/app-config';
import { JobReconciler } from '../../../queue/job-reconciler';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { allows, parseAllowList } from '../../../shared/outbound/address-policy';
import { OrganizationsService } from '../../organizations/application/organizations.service';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { UsersService } from '../../users/application/users.service';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { addressingProblem } from './saml-checks';
import { settingsFromMetadata } from './saml-metadata';
import { assertValidSettings, DEFAULT_ATTRIBUTES, isAllowedRedirect, roleFor, SamlSettings } from './saml-settings';
import { REQUEST_TTL_MS, RequestIdCache, SamlStore } from './saml-store';

export const SAML_FEATURE = 'sso.saml';
const NAME_ID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
/** Clock difference tolerated between the IdP and us. */
const CLOCK_SKEW_MS = 30_000;

export interface SamlSettingsInput extends Partial<Omit<SamlSettings, 'attributes'>> {
  attributes?: Partial<SamlSettings['attributes']>;
  idpMetadataXml?: string;
}

/** The service provider's side as the IdP needs to know it. */
export interface ServiceProvider {
  entityId: string;
  acsUrl: string;
  metadataUrl: string;
  loginUrl: string;
}

/** A failed sign-in: 401 SAML_INVALID, with a message safe to show. */
export function samlInvalid(message: string): DomainError {
  return new DomainError('SAML_INVALID', message);
}

/**
 * SAML single sign-on per organization (enterprise tier): settings, the SP metadata, the
 * AuthnRequest redirect, and what happens once node-saml has validated a response: the user
 * is provisioned or updated from the assertion, and gets the same token pair as a password
 * login, directly or through a one-time code.
 */
@Injectable()
export class SamlService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Saml');

  constructor(
    private readonly config: AppConfig,
    private readonly store: SamlStore,
    private readonly organizations: OrganizationRepository,
    private readonly organizationsService: OrganizationsService,
    private readonly subscriptions: SubscriptionService,
    private readonly users: UserRepository,
    private readonly usersService: UsersService,
    private readonly reconciler: JobReconciler,
    private readonly cls: ClsService,
  ) {}

  /** SAML settings from the environment for the default organization (compose deployments). */
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

  serviceProvider(slug: string): ServiceProvider {
    const base = `${this.config.publicUrl}/api/auth/saml/${slug}`;
    return { entityId: `${base}/metadata`, acsUrl: `${base}/acs`, metadataUrl: `${base}/metadata`, loginUrl: `${base}/login` };
  }

  async settings(caller: Principal): Promise<{ settings: SamlSettings; organization: Organization }> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const settings = await this.store.settings(caller.organizationId);
    if (!settings) throw new DomainError('NOT_FOUND', 'SAML is not configured for this organization');
    return { settings, organization };
  }

  async configure(caller: Principal, input: SamlSettingsInput): Promise<{ settings: SamlSettings; organization: Organization }> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    const organization = await this.organizationsService.require(caller.organizationId);
    const settings = this.normalize(input);
    await this.store.saveSettings(organization.id, settings);
    this.logger.log({ msg: 'SAML settings saved', organization: organization.slug, idp: settings.idpEntityId, by: caller.userId });
    return { settings, organization };
  }

  async remove(caller: Principal): Promise<void> {
    await this.subscriptions.assertFeature(caller.organizationId, SAML_FEATURE);
    if (!(await this.store.deleteSettings(caller.organizationId)))
      throw new DomainError('NOT_FOUND', 'SAML is not configured for this organization');
  }

  /** node-saml's options for the organization, with a request-id cache of this request's own. */
  async options(slug: string): Promise<{ options: SamlConfig; cache: RequestIdCache; organization: Organization; settings: SamlSettings }> {
    const { organization, settings } = await this.enabled(slug);
    const sp = this.serviceProvider(slug);
    const cache = new RequestIdCache(this.store, organization.id);
    const options: SamlConfig = {
      issuer: sp.entityId,
      callbackUrl: sp.acsUrl,
      audience: sp.entityId,
      entryPoint: settings.idpSsoUrl,
      idpIssuer: settings.idpEntityId,
      idpCert: settings.idpCertificates,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: settings.wantResponseSigned,
      signatureAlgorithm: 'sha256',
      digestAlgorithm: 'sha256',
      identifierFormat: NAME_ID_EMAIL,
      disableRequestedAuthnContext: true,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: REQUEST_TTL_MS,
      cacheProvider: cache,
    };
    return { options, cache, organization, settings };
  }

  /** The IdP URL with a fresh AuthnRequest (HTTP-Redirect binding); its id is remembered. */
  async loginUrl(slug: string, redirect?: string): Promise<string> {
    const { options, settings } = await this.options(slug);
    if (redirect !== undefined && !isAllowedRedirect(settings, redirect)) {
      throw new DomainError('VALIDATION_FAILED', 'redirect is not one of the allowed redirects', [
        { path: 'redirect', message: 'redirect must start with one of the allowedRedirects of the SAML settings' },
      ]);
    }
    return new SAML(options).getAuthorizeUrlAsync(redirect ?? '', undefined, {});
  }

  async metadata(slug: string): Promise<string> {
    const { options } = await this.options(slug);
    return new SAML(options).generateServiceProviderMetadata(null, null);
  }

  /**
   * After node-saml validated the response: provisions or updates the user. The response's
   * AuthnRequest id must have been used by this very request (a replay racing it loses).
   */
  @Transactional()
  async signIn(slug: string, profile: Profile | null, cache: RequestIdCache): Promise<User> {
    const { organization, settings } = await this.enabled(slug);
    if (!profile) throw samlInvalid('The response carries no assertion');
    const problem = addressingProblem(profile, { idpEntityId: settings.idpEntityId, acsUrl: this.serviceProvider(slug).acsUrl });
    if (problem) throw samlInvalid(problem);
    if (!cache.claimed) throw samlInvalid('This response was already used');
    const attributes = profile.attributes as Record<string, unknown> | undefined;
    const email = User.normalizeEmail(String(first(attributes?.[settings.attributes.email]) ?? profile.nameID ?? ''));
    if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw samlInvalid('The assertion does not name a usable email');
    const groups = many(attributes?.[settings.attributes.groups]);
    const role = roleFor(settings, groups);
    const names = {
      firstName: limited(first(attributes?.[settings.attributes.firstName])),
      lastName: limited(first(attributes?.[settings.attributes.lastName])),
    };

    const existing = await this.users.findByEmail(email);
    // One answer for all, so an IdP of one organization cannot probe the accounts of another.
    // Operators sign in with their password only: an organization's IdP must not assert one.
    if (existing && (existing.organizationId !== organization.id || !existing.canSignIn || existing.isOperator)) {
      const reason =
        existing.organizationId !== organization.id
          ? 'the account belongs to another organization'
          : existing.isOperator
            ? 'the account is an instance operator, who signs in with a password only'
            : 'the account is disabled';
      this.logger.warn({ msg: 'SAML sign-in refused', organization: slug, reason });
      throw samlInvalid('This account cannot sign in here');
    }
    if (existing) {
      existing.change({ role, ...names });
      await this.users.update(existing);
      this.logger.log({ msg: 'SAML sign-in', organization: slug, userId: existing.id, role });
      return existing;
    }
    const user = await this.usersService.create(organization.id, { email, role, ...names });
    this.logger.log({ msg: 'SAML sign-in, user provisioned', organization: slug, userId: user.id, role });
    return user;
  }

  issueCode(user: User): Promise<string> {
    return this.store.issueCode(user.organizationId, user.id);
  }

  /** The user a one-time code was issued for; the code is spent either way. */
  async exchange(code: string): Promise<User> {
    const used = await this.store.useCode(code);
    const user = used ? await this.users.findById(used.organizationId, used.userId) : null;
    if (!user?.canSignIn) throw samlInvalid('The code is unknown, used or expired');
    return user;
  }

  /** The organization's enabled settings; 404 otherwise, 403 below the enterprise tier. */
  private async enabled(slug: string): Promise<{ organization: Organization; settings: SamlSettings }> {
    const organization = await this.organizations.findBySlug(slug);
    const settings = organization ? await this.store.settings(organization.id) : null;
    if (!organization || !settings?.enabled) throw new DomainError('NOT_FOUND', `No SAML sign-in for '${slug}'`);
    await this.subscriptions.assertFeature(organization.id, SAML_FEATURE);
    return { organization, settings };
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
    const allowList = parseAllowList(this.config.outboundAllowList);
    assertValidSettings(settings, (host) => allows(allowList, { hostname: host, address: host }));
    return settings;
  }
}

function first(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

function many(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

function limited(value: unknown): string | null {
  return typeof value === 'string' && value.trim() ? value.trim().slice(0, 200) : null;
}
