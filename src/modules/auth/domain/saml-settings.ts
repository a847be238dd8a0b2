import { X509Certificate } from 'node:crypto';
import { DomainError, ErrorDetail } from '../../../shared/errors/domain-error';
import { Role, ROLES } from '../../../shared/auth/principal';

/** The tier feature SAML sign-in is part of. */
export const SAML_FEATURE = 'sso.saml';

export interface RoleMapping {
  /** A value of the groups attribute. */
  group: string;
  role: Role;
}

/** An organization's SAML identity provider and how its users map to ours. */
export interface SamlSettings {
  idpEntityId: string;
  idpSsoUrl: string;
  /** The IdP's single logout URL (HTTP-Redirect binding); null: no single logout with the IdP. */
  idpSloUrl: string | null;
  /** PEM; two during a certificate rotation. */
  idpCertificates: string[];
  attributes: { email: string; firstName: string; lastName: string; groups: string };
  /** Ordered: the first mapping whose group the user has gives the role. */
  roleMappings: RoleMapping[];
  defaultRole: Role;
  /** The assertion is always signed; this also requires the whole response to be. */
  wantResponseSigned: boolean;
  /** Refuse a response whose assertion is not encrypted (to our SP encryption certificate). */
  wantAssertionsEncrypted: boolean;
  /** Accept responses that answer no AuthnRequest of ours (IdP-initiated), each assertion once. */
  allowIdpInitiated: boolean;
  /** Where the login may send the browser back to (URL prefixes). */
  allowedRedirects: string[];
  enabled: boolean;
  /** Password login refused for everyone but admins (their break-glass). */
  enforced: boolean;
}

export const DEFAULT_ATTRIBUTES: SamlSettings['attributes'] = {
  email: 'email',
  firstName: 'firstName',
  lastName: 'lastName',
  groups: 'groups',
};

/** What settings saved before a field existed read as. */
const LATER_FIELDS: Pick<SamlSettings, 'idpSloUrl' | 'wantAssertionsEncrypted' | 'allowIdpInitiated'> = {
  idpSloUrl: null,
  wantAssertionsEncrypted: false,
  allowIdpInitiated: false,
};

/** Stored settings with the fields added since they were saved, at their defaults. */
export function withDefaults(stored: Partial<SamlSettings>): SamlSettings {
  return { ...LATER_FIELDS, ...stored } as SamlSettings;
}

/** The service provider's side (ours) as the IdP needs to know it. */
export interface ServiceProvider {
  entityId: string;
  acsUrl: string;
  /** Single logout, both directions (HTTP-Redirect or HTTP-POST binding). */
  sloUrl: string;
  metadataUrl: string;
  loginUrl: string;
}

/** Our SAML endpoints for the organization `slug`, under the service's public URL. */
export function serviceProviderFor(publicUrl: string, slug: string): ServiceProvider {
  const base = `${publicUrl}/api/auth/saml/${slug}`;
  return {
    entityId: `${base}/metadata`,
    acsUrl: `${base}/acs`,
    sloUrl: `${base}/slo`,
    metadataUrl: `${base}/metadata`,
    loginUrl: `${base}/login`,
  };
}

/**
 * Checks settings before they are saved: certificates parse (and are not expired), the IdP
 * URL is https (or on a host the outbound allow-list names), redirects are absolute URLs.
 * Answers every problem at once.
 */
export function assertValidSettings(settings: SamlSettings, allowsHttp: (host: string) => boolean, now = new Date()): void {
  const problems: ErrorDetail[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const checkUrl = (path: 'idpSsoUrl' | 'idpSloUrl', value: string) => {
    const url = parseUrl(value);
    if (!url) add(path, `${path} must be an absolute URL`);
    else if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowsHttp(url.hostname))) {
      add(path, `${path} must be https (http only for hosts in OUTBOUND_ALLOWLIST)`);
    }
  };
  checkUrl('idpSsoUrl', settings.idpSsoUrl);
  if (settings.idpSloUrl !== null) checkUrl('idpSloUrl', settings.idpSloUrl);
  if (!settings.idpCertificates.length || settings.idpCertificates.length > 2)
    add('idpCertificates', 'give one or two IdP signing certificates');
  settings.idpCertificates.forEach((pem, i) => {
    try {
      const certificate = new X509Certificate(pem);
      if (new Date(certificate.validTo) < now) add(`idpCertificates[${i}]`, `the certificate expired on ${certificate.validTo}`);
    } catch {
      add(`idpCertificates[${i}]`, 'not a PEM X.509 certificate');
    }
  });
  settings.allowedRedirects.forEach((redirect, i) => {
    const parsed = parseUrl(redirect);
    if (!parsed || !['https:', 'http:'].includes(parsed.protocol)) add(`allowedRedirects[${i}]`, 'must be an absolute http(s) URL');
  });
  settings.roleMappings.forEach((m, i) => {
    if (!ROLES.includes(m.role)) add(`roleMappings[${i}].role`, `role must be one of ${ROLES.join(', ')}`);
  });
  if (problems.length) throw new DomainError('VALIDATION_FAILED', 'The SAML settings are not valid', problems);
}

/** The role a user with these groups gets. */
export function roleFor(settings: Pick<SamlSettings, 'roleMappings' | 'defaultRole'>, groups: string[]): Role {
  return settings.roleMappings.find((m) => groups.includes(m.group))?.role ?? settings.defaultRole;
}

/** Whether `target` is one of the allowed redirects (same origin, under its path). */
export function isAllowedRedirect(settings: Pick<SamlSettings, 'allowedRedirects'>, target: string): boolean {
  const url = parseUrl(target);
  if (!url) return false;
  return settings.allowedRedirects.some((allowed) => {
    const base = parseUrl(allowed);
    return !!base && base.origin === url.origin && url.pathname.startsWith(base.pathname);
  });
}

function parseUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}
