import { Role, ROLES } from '../../../shared/auth/principal';
import { DomainError, ErrorDetail } from '../../../shared/errors/domain-error';

/** The tier feature OpenID Connect sign-in is part of. */
export const OIDC_FEATURE = 'sso.oidc';

export const DEFAULT_SCOPES = 'openid email profile';

export interface OidcRoleMapping {
  /** A value of the groups claim. */
  value: string;
  role: Role;
}

/**
 * An organization's OpenID Connect provider and how its users map to ours. The client secret
 * is not part of it: it is stored sealed beside it and never shown.
 */
export interface OidcSettings {
  /** The provider's issuer identifier; its discovery document is at `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  /** Space-separated; always includes `openid`. */
  scopes: string;
  /** Claim names to read the email, display name and groups from. */
  claims: { email: string; name: string; groups: string };
  /** Ordered: the first mapping whose value the groups claim holds gives the role. */
  roleMappings: OidcRoleMapping[];
  defaultRole: Role;
  /** Where the login may send the browser back to (URL prefixes). */
  allowedRedirects: string[];
  /**
   * Accept an email the provider does not say is verified (`email_verified` missing or false):
   * for a provider that never sends the claim. Off (the default): only `email_verified: true`
   * signs in, since the email is what links a first sign-in to an existing account.
   */
  allowUnverifiedEmail: boolean;
  enabled: boolean;
}

export const DEFAULT_CLAIMS: OidcSettings['claims'] = { email: 'email', name: 'name', groups: 'groups' };

/** Our OIDC endpoints for the organization `slug`, under the service's public URL: what the provider's client registration needs. */
export interface OidcClientEndpoints {
  redirectUri: string;
  loginUrl: string;
}

export function oidcEndpointsFor(publicUrl: string, slug: string): OidcClientEndpoints {
  const base = `${publicUrl}/api/auth/oidc/${slug}`;
  return { redirectUri: `${base}/callback`, loginUrl: `${base}/login` };
}

/**
 * Checks settings before they are saved (discovery is checked after): the issuer is an https
 * URL (http only on a host the outbound allow-list names), scopes include `openid`, redirects
 * are absolute http(s) URLs, roles exist. Answers every problem at once.
 */
export function assertValidOidcSettings(settings: OidcSettings, allowsHttp: (host: string) => boolean): void {
  const problems: ErrorDetail[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const issuer = parseUrl(settings.issuer);
  if (!issuer) add('issuer', 'issuer must be an absolute URL');
  else if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && allowsHttp(issuer.hostname.replace(/^\[(.*)\]$/, '$1')))) {
    add('issuer', 'issuer must be https (http only for hosts in OUTBOUND_ALLOWLIST)');
  } else if (issuer.search || issuer.hash || issuer.username || issuer.password) {
    add('issuer', 'issuer must not carry a query, a fragment or credentials');
  }
  if (!settings.clientId.trim()) add('clientId', 'clientId must not be empty');
  const scopes = settings.scopes.split(' ').filter(Boolean);
  if (!scopes.includes('openid')) add('scopes', 'scopes must include openid');
  if (scopes.some((s) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) add('scopes', 'scopes must be space-separated scope tokens');
  for (const [name, claim] of Object.entries(settings.claims)) {
    if (!claim.trim()) add(`claims.${name}`, `claims.${name} must not be empty`);
  }
  settings.allowedRedirects.forEach((redirect, i) => {
    const parsed = parseUrl(redirect);
    if (!parsed || !['https:', 'http:'].includes(parsed.protocol)) add(`allowedRedirects[${i}]`, 'must be an absolute http(s) URL');
  });
  settings.roleMappings.forEach((m, i) => {
    if (!ROLES.includes(m.role)) add(`roleMappings[${i}].role`, `role must be one of ${ROLES.join(', ')}`);
  });
  if (!ROLES.includes(settings.defaultRole)) add('defaultRole', `defaultRole must be one of ${ROLES.join(', ')}`);
  if (problems.length) throw new DomainError('VALIDATION_FAILED', 'The OIDC settings are not valid', problems);
}

/** Who the provider says signed in, as our user needs it. */
export interface OidcIdentity {
  /** The provider's `iss` and `sub`: who signed in, whatever the email. */
  issuer: string;
  subject: string;
  email: string;
  role: Role;
  firstName: string | null;
  lastName: string | null;
}

/** Why the claims name no account we can sign in: `code` the error to answer, `reason` for the log. */
export interface ClaimsRefusal {
  code: 'OIDC_INVALID' | 'OIDC_EMAIL_NOT_VERIFIED';
  reason: string;
}

/**
 * Maps the provider's claims (the ID token's, completed by the userinfo answer) to a user: the
 * issuer and subject, the email claim (lower-cased; refused unless `email_verified` is true, or
 * the settings allow an unverified email), the name (the standard given_name and family_name
 * when present, else the name claim split at its first space), and the role from the groups
 * claim. Answers a refusal instead when the claims name no usable account.
 */
export function identityFromClaims(
  settings: Pick<OidcSettings, 'claims' | 'roleMappings' | 'defaultRole' | 'allowUnverifiedEmail'>,
  claims: Record<string, unknown>,
): OidcIdentity | ClaimsRefusal {
  const invalid = (reason: string): ClaimsRefusal => ({ code: 'OIDC_INVALID', reason });
  const { iss: issuer, sub: subject } = claims;
  if (typeof issuer !== 'string' || !issuer || typeof subject !== 'string' || !subject) return invalid('The ID token has no iss or sub');
  const rawEmail = claims[settings.claims.email];
  if (typeof rawEmail !== 'string') return invalid(`The provider did not send the email claim '${settings.claims.email}'`);
  const email = rawEmail.trim().toLowerCase();
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) return invalid('The email claim is not a usable email');
  // Some providers send the claim as a string.
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  if (!verified && !settings.allowUnverifiedEmail) {
    const reason =
      claims.email_verified === undefined
        ? 'The provider did not send email_verified: the email is not known to be verified'
        : 'The provider says the email is not verified';
    return { code: 'OIDC_EMAIL_NOT_VERIFIED', reason };
  }
  const groups = many(claims[settings.claims.groups]);
  const name = limited(claims[settings.claims.name]);
  const [first, ...rest] = name ? name.split(/\s+/) : [];
  return {
    issuer,
    subject,
    email,
    role: roleForGroups(settings, groups),
    firstName: limited(claims.given_name) ?? limited(first),
    lastName: limited(claims.family_name) ?? limited(rest.join(' ')),
  };
}

/** The role a user with these groups gets: the first mapping that matches, else the default role. */
export function roleForGroups(settings: Pick<OidcSettings, 'roleMappings' | 'defaultRole'>, groups: string[]): Role {
  return settings.roleMappings.find((m) => groups.includes(m.value))?.role ?? settings.defaultRole;
}

function many(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).filter((v) => typeof v === 'string' || typeof v === 'number').map(String);
}

function limited(value: unknown): string | null {
  return typeof value === 'string' && value.trim() ? value.trim().slice(0, 200) : null;
}

function parseUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}
