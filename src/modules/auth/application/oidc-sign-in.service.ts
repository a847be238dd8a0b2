import { Injectable, Logger } from '@nestjs/common';
import * as client from 'openid-client';
import { AppConfig } from '../../../config/app-config';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { DomainError } from '../../../shared/errors/domain-error';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { OidcLogin } from '../domain/oidc-login';
import { identityFromClaims, OIDC_FEATURE, oidcEndpointsFor, OidcIdentity } from '../domain/oidc-settings';
import { oidcInvalid } from '../domain/oidc.errors';
import { OidcStore, StoredOidcSettings } from '../domain/oidc.store';
import { isAllowedRedirect } from '../domain/saml-settings';
import { LoginCodes } from './login-codes';
import { isProviderError, OidcProviders } from './oidc-providers';
import { SsoAccount, SsoAccounts } from './sso-accounts';

interface Enabled {
  organization: Organization;
  stored: StoredOidcSettings;
}

/**
 * OpenID Connect sign-in per organization (enterprise tier), authorization code flow with PKCE:
 * the redirect to the provider (state, nonce and code verifier kept server-side, once, for ten
 * minutes), and the callback: openid-client exchanges the code and verifies the ID token
 * (signature by the provider's JWKS, issuer, audience, expiry, nonce); the user is then
 * provisioned or updated as a SAML sign-in does (SsoAccounts). The user is the one linked to
 * the ID token's issuer and subject; the first sign-in of a subject links it, to the user
 * with its (verified) email or to the user it creates, and a user linked to another subject
 * of the issuer is refused. Every refusal is 401 OIDC_INVALID (OIDC_EMAIL_NOT_VERIFIED for an
 * email the provider does not say is verified) and a failed `auth.signed_in` in the
 * organization's audit log.
 */
@Injectable()
export class OidcSignInService {
  private readonly logger = new Logger('Oidc');

  constructor(
    private readonly config: AppConfig,
    private readonly store: OidcStore,
    private readonly organizations: OrganizationRepository,
    private readonly subscriptions: SubscriptionService,
    private readonly providers: OidcProviders,
    private readonly accounts: SsoAccounts,
    private readonly users: UserRepository,
    private readonly codes: LoginCodes,
    private readonly audit: AuditTrail,
  ) {}

  /** The provider's authorization URL for a fresh sign-in; `redirect`, if given, must be an allowed one. */
  async loginUrl(slug: string, redirect?: string): Promise<string> {
    const { organization, stored } = await this.enabled(slug);
    const { settings } = stored;
    if (redirect !== undefined && !isAllowedRedirect(settings, redirect)) {
      throw new DomainError('VALIDATION_FAILED', 'redirect is not one of the allowed redirects', [
        { path: 'redirect', message: 'redirect must start with one of the allowedRedirects of the OIDC settings' },
      ]);
    }
    const config = await this.reach(organization, () => this.providers.configuration(organization.id, settings, stored.clientSecret));
    const state = client.randomState();
    const nonce = client.randomNonce();
    const codeVerifier = client.randomPKCECodeVerifier();
    await this.store.saveLogin(
      OidcLogin.start({ state, organizationId: organization.id, nonce, codeVerifier, redirect: redirect ?? null }),
    );
    return client.buildAuthorizationUrl(config, {
      redirect_uri: oidcEndpointsFor(this.config.publicUrl, slug).redirectUri,
      scope: settings.scopes,
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    }).href;
  }

  /**
   * The provider's answer (`query`: the callback's query string as received): the user signed
   * in, and where the browser goes back to (null: the caller answers JSON).
   */
  async callback(slug: string, query: string): Promise<{ user: User; redirect: string | null }> {
    const { organization, stored } = await this.enabled(slug);
    const { settings } = stored;
    const params = new URLSearchParams(query);
    const state = params.get('state');
    const login = state ? await this.store.takeLogin(organization.id, OidcLogin.hash(state)) : null;
    if (!state || !login) throw await this.refuse(organization, 'the state is unknown, used, expired or of another organization');
    const providerError = params.get('error');
    if (providerError)
      throw await this.refuse(organization, `the provider answered ${providerError.slice(0, 100)}`, 'The provider refused the sign-in');
    if (login.props.redirect !== null && !isAllowedRedirect(settings, login.props.redirect)) {
      throw await this.refuse(organization, 'the redirect is no longer allowed');
    }

    let claims: Record<string, unknown>;
    try {
      const config = await this.providers.configuration(organization.id, settings, stored.clientSecret);
      const currentUrl = new URL(oidcEndpointsFor(this.config.publicUrl, slug).redirectUri);
      currentUrl.search = params.toString();
      const tokens = await client.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: login.props.codeVerifier,
        expectedState: state,
        expectedNonce: login.props.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims()!;
      claims = { ...idToken };
      // Claims the ID token lacks are asked of the userinfo endpoint (for the same subject); the ID token's win.
      const missing = Object.values(settings.claims).some((name) => !(name in idToken));
      if (missing && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
        claims = { ...(await client.fetchUserInfo(config, tokens.access_token, idToken.sub)), ...idToken };
      }
    } catch (error) {
      if (!isProviderError(error)) throw error;
      throw await this.refuse(organization, error.message);
    }

    const identity = identityFromClaims(settings, claims);
    if ('code' in identity) {
      const shown = identity.code === 'OIDC_EMAIL_NOT_VERIFIED' ? identity.reason : 'The provider did not name a usable account';
      throw await this.refuse(organization, identity.reason, shown, undefined, identity.code);
    }
    const outcome = await this.accounts.signIn(organization, 'oidc', identity, await this.account(organization, identity));
    if ('refused' in outcome) {
      // A refused account of this organization has its `denied` sign-in already.
      if (!outcome.sameOrganization) throw await this.refuse(organization, outcome.refused, undefined, identity.email);
      throw oidcInvalid('This account cannot sign in here');
    }
    return { user: outcome.user, redirect: login.props.redirect };
  }

  /**
   * The user the identity's issuer and subject are linked to; else (a first sign-in) the user
   * with its email, unless linked to another subject of the issuer, or none (one is created):
   * linked in the sign-in's transaction.
   */
  private async account(organization: Organization, identity: OidcIdentity): Promise<SsoAccount> {
    const { issuer, subject, email } = identity;
    const linkedId = await this.store.linkedUser(organization.id, issuer, subject);
    // The link is deleted with its user: a linked user exists.
    if (linkedId) return { existing: await this.users.findById(organization.id, linkedId) };
    const existing = await this.users.findByEmail(email);
    if (existing?.organizationId === organization.id && (await this.store.linkedSubject(organization.id, issuer, existing.id))) {
      throw await this.refuse(
        organization,
        'the email is of a user linked to another subject of the provider',
        'This account cannot sign in here',
        email,
      );
    }
    const onSignedIn = async (user: User) => {
      if (user.organizationId !== organization.id) return;
      if (!(await this.store.link(organization.id, issuer, subject, user.id))) throw oidcInvalid('This account cannot sign in here');
      this.logger.log({ msg: 'OIDC identity linked', organization: organization.slug, userId: user.id, issuer, subject });
    };
    return { existing, onSignedIn };
  }

  /** `redirect` with a one-time code for the user's token pair (exchanged at POST /api/auth/oidc/exchange). */
  redirectWithCode(user: User, redirect: string): Promise<string> {
    return this.codes.redirectWithCode(user, 'oidc', redirect);
  }

  /** The user a one-time code of an OIDC sign-in was issued for; the code is spent either way. */
  async exchange(code: string): Promise<User> {
    const redeemed = await this.codes.redeem(code, 'oidc');
    if (!redeemed) throw oidcInvalid('The code is unknown, used or expired');
    return redeemed.user;
  }

  /** The organization's enabled settings; 404 otherwise, 403 below the enterprise tier. */
  private async enabled(slug: string): Promise<Enabled> {
    const organization = await this.organizations.findBySlug(slug);
    const stored = organization ? await this.store.settings(organization.id) : null;
    if (!organization || !stored?.settings.enabled) throw new DomainError('NOT_FOUND', `No OIDC sign-in for '${slug}'`);
    await this.subscriptions.assertFeature(organization.id, OIDC_FEATURE);
    return { organization, stored };
  }

  /** The provider's discovery, or 401 OIDC_INVALID when it cannot be had (the provider is down or answers wrong). */
  private async reach<T>(organization: Organization, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (!isProviderError(error)) throw error;
      this.logger.warn({ msg: 'OIDC provider not usable', organization: organization.slug, reason: error.message });
      throw oidcInvalid('The identity provider cannot be reached');
    }
  }

  /** Logs and records a refused sign-in (an anonymous caller, naming the email when known); answers the error to throw. */
  private async refuse(
    organization: Organization,
    reason: string,
    shown = 'The OIDC sign-in is not valid',
    email?: string,
    code: 'OIDC_INVALID' | 'OIDC_EMAIL_NOT_VERIFIED' = 'OIDC_INVALID',
  ): Promise<DomainError> {
    this.logger.warn({ msg: 'OIDC sign-in refused', organization: organization.slug, reason });
    await this.audit.record({
      organizationId: organization.id,
      action: 'auth.signed_in',
      target: null,
      outcome: 'failure',
      actor: { type: 'anonymous', id: null, name: email ?? null, via: 'oidc' },
    });
    return new DomainError(code, shown);
  }
}
