import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Profile, SAML, SamlConfig, ValidateInResponseTo } from '@node-saml/passport-saml';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { User } from '../../users/domain/user';
import { addressingProblem, assertionIdentity, weakAlgorithmIn } from '../domain/saml-checks';
import { decryptionKeyFor, hasEncryptedAssertion } from '../domain/saml-decryption';
import { isAllowedRedirect, roleFor, SAML_FEATURE, SamlSettings, serviceProviderFor } from '../domain/saml-settings';
import { serviceProviderMetadata } from '../domain/saml-sp-metadata';
import { samlInvalid } from '../domain/saml.errors';
import { REQUEST_TTL_MS, SamlStore } from '../domain/saml.store';
import { LoginCodes } from './login-codes';
import { RequestIdCache } from './request-id-cache';
import { SamlSpKeysService } from './saml-sp-keys.service';
import { SsoAccounts } from './sso-accounts';

/** A validated SAML sign-in: the user, and the session (refresh-token family) it starts, known by its NameID for single logout. */
export interface SamlSignedIn {
  user: User;
  familyId: string;
}

/** The organization's node-saml options, and what they were made from. */
export interface SamlContext {
  options: SamlConfig;
  cache: RequestIdCache;
  settings: SamlSettings;
  organization: Organization;
}

/** The longest NameID and SessionIndex kept for single logout (their columns' sizes). */
const MAX_NAME_ID = 1024;
const MAX_SESSION_INDEX = 256;

export const NAME_ID_EMAIL = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
/** Clock difference tolerated between the IdP and us. */
const CLOCK_SKEW_MS = 30_000;

/**
 * SAML single sign-on per organization (enterprise tier): the SP metadata, the AuthnRequest
 * redirect, and what happens once node-saml has validated a response: the user is provisioned
 * or updated from the assertion, and gets the same token pair as a password login, directly
 * or through a one-time code.
 */
@Injectable()
export class SamlSignInService {
  constructor(
    private readonly config: AppConfig,
    private readonly store: SamlStore,
    private readonly organizations: OrganizationRepository,
    private readonly subscriptions: SubscriptionService,
    private readonly spKeys: SamlSpKeysService,
    private readonly accounts: SsoAccounts,
    private readonly codes: LoginCodes,
  ) {}

  /**
   * node-saml's options for the organization, with a request-id cache of this request's own.
   * Messages are signed with the current SP key; an encrypted assertion in `samlResponse`
   * (base64, as posted) is decrypted with whichever live SP key it was encrypted to.
   */
  async options(slug: string, samlResponse?: string): Promise<SamlContext> {
    const { organization, settings } = await this.enabled(slug);
    const sp = serviceProviderFor(this.config.publicUrl, slug);
    const cache = new RequestIdCache(this.store, organization.id);
    const privateKeys = (await this.spKeys.live(organization.id)).map((k) => k.props.privateKey);
    const responseXml = samlResponse ? Buffer.from(samlResponse, 'base64').toString('utf8') : '';
    const options: SamlConfig = {
      privateKey: privateKeys[0],
      decryptionPvk: decryptionKeyFor(responseXml, privateKeys),
      ...(settings.idpSloUrl ? { logoutUrl: settings.idpSloUrl } : {}),
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
      // Without IdP-initiated sign-in every response must answer a request of ours.
      validateInResponseTo: settings.allowIdpInitiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: REQUEST_TTL_MS,
      cacheProvider: cache,
    };
    return { options, cache, settings, organization };
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

  /** Our metadata: every live SP certificate (signing and encryption), ACS and single logout. */
  async metadata(slug: string): Promise<string> {
    const { organization } = await this.enabled(slug);
    const keys = await this.spKeys.live(organization.id);
    return serviceProviderMetadata(
      serviceProviderFor(this.config.publicUrl, slug),
      keys.map((k) => k.props.certificate),
      NAME_ID_EMAIL,
    );
  }

  /**
   * After node-saml validated the response: provisions or updates the user. The response's
   * AuthnRequest id must have been used by this very request (a replay racing it loses); a
   * response that answers no request (IdP-initiated, when the settings allow it) is accepted
   * once: its assertion ID is recorded until the assertion expires. The account is SsoAccounts'
   * (shared with OIDC): the organization's audit log records the sign-in, and a refused account
   * of the organization. The session is recorded by NameID and SessionIndex for single logout.
   */
  async signIn(slug: string, profile: Profile | null, cache: RequestIdCache): Promise<SamlSignedIn> {
    const { organization, settings } = await this.enabled(slug);
    if (!profile) throw samlInvalid('The response carries no assertion');
    const problem = addressingProblem(profile, {
      idpEntityId: settings.idpEntityId,
      acsUrl: serviceProviderFor(this.config.publicUrl, slug).acsUrl,
    });
    if (problem) throw samlInvalid(problem);
    const encrypted = hasEncryptedAssertion(profile.getSamlResponseXml?.() ?? '');
    if (settings.wantAssertionsEncrypted && !encrypted) throw samlInvalid('The assertion must be encrypted');
    // An encrypted assertion's signature was out of sight of the ACS guard's check.
    const weak = encrypted ? weakAlgorithmIn(profile.getAssertionXml?.() ?? '') : null;
    if (weak) throw samlInvalid(weak);
    if (profile.inResponseTo) {
      if (!cache.claimed) throw samlInvalid('This response was already used');
    } else {
      if (!settings.allowIdpInitiated) throw samlInvalid('The response answers no sign-in request of ours');
      const assertion = assertionIdentity(profile.getAssertionXml?.(), new Date(Date.now() + REQUEST_TTL_MS));
      if (!assertion || !(await this.store.claimAssertion(organization.id, assertion.id.slice(0, 256), assertion.expiresAt))) {
        throw samlInvalid('This response was already used');
      }
    }
    const attributes = profile.attributes as Record<string, unknown> | undefined;
    const email = User.normalizeEmail(String(first(attributes?.[settings.attributes.email]) ?? profile.nameID ?? ''));
    if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw samlInvalid('The assertion does not name a usable email');
    const groups = many(attributes?.[settings.attributes.groups]);
    const role = roleFor(settings, groups);
    const names = {
      firstName: limited(first(attributes?.[settings.attributes.firstName])),
      lastName: limited(first(attributes?.[settings.attributes.lastName])),
    };

    const outcome = await this.accounts.signIn(organization, 'saml', { email, role, ...names });
    if ('refused' in outcome) throw samlInvalid('This account cannot sign in here');
    const { user } = outcome;
    const familyId = randomUUID();
    // A NameID too long to keep cannot be logged out by name: that session ends with its tokens only.
    if (profile.nameID && profile.nameID.length <= MAX_NAME_ID) await this.saveSession(organization, user, familyId, profile);
    return { user, familyId };
  }

  private async saveSession(organization: Organization, user: User, familyId: string, profile: Profile): Promise<void> {
    const sessionIndex =
      typeof profile.sessionIndex === 'string' && profile.sessionIndex.length <= MAX_SESSION_INDEX ? profile.sessionIndex : null;
    await this.store.saveSession({
      familyId,
      organizationId: organization.id,
      userId: user.id,
      nameId: profile.nameID,
      nameIdFormat: typeof profile.nameIDFormat === 'string' ? profile.nameIDFormat.slice(0, 256) : null,
      sessionIndex,
      expiresAt: new Date(Date.now() + this.config.jwt.refreshTtlSeconds * 1000),
    });
  }

  /**
   * Where a browser goes after signing in: back to `relayState`, which the settings must
   * allow, with a one-time code for the token pair (never the tokens themselves).
   */
  async redirectWithCode(slug: string, { user, familyId }: SamlSignedIn, relayState: string): Promise<string> {
    const { settings } = await this.enabled(slug);
    if (!isAllowedRedirect(settings, relayState)) {
      throw new DomainError('VALIDATION_FAILED', 'The RelayState is not one of the allowed redirects', [
        { path: 'RelayState', message: 'RelayState must start with one of the allowedRedirects of the SAML settings' },
      ]);
    }
    return this.codes.redirectWithCode(user, 'saml', relayState, familyId);
  }

  /** The user a one-time code was issued for, and the session it starts; the code is spent either way. */
  async exchange(code: string): Promise<{ user: User; familyId?: string }> {
    const redeemed = await this.codes.redeem(code, 'saml');
    if (!redeemed) throw samlInvalid('The code is unknown, used or expired');
    return { user: redeemed.user, ...(redeemed.familyId ? { familyId: redeemed.familyId } : {}) };
  }

  /** The organization's enabled settings; 404 otherwise, 403 below the enterprise tier. */
  async enabled(slug: string): Promise<{ organization: Organization; settings: SamlSettings }> {
    const organization = await this.organizations.findBySlug(slug);
    const settings = organization ? await this.store.settings(organization.id) : null;
    if (!organization || !settings?.enabled) throw new DomainError('NOT_FOUND', `No SAML sign-in for '${slug}'`);
    await this.subscriptions.assertFeature(organization.id, SAML_FEATURE);
    return { organization, settings };
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
