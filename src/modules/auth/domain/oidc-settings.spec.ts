import { DomainError } from '../../../shared/errors/domain-error';
import { assertValidOidcSettings, DEFAULT_CLAIMS, DEFAULT_SCOPES, identityFromClaims, OidcSettings, roleForGroups } from './oidc-settings';

const settings = (overrides: Partial<OidcSettings> = {}): OidcSettings => ({
  issuer: 'https://idp.acme.test',
  clientId: 'platform',
  scopes: DEFAULT_SCOPES,
  claims: DEFAULT_CLAIMS,
  roleMappings: [
    { value: 'admins', role: 'admin' },
    { value: 'staff', role: 'member' },
  ],
  defaultRole: 'viewer',
  allowedRedirects: ['https://app.acme.test/'],
  allowUnverifiedEmail: false,
  enabled: true,
  ...overrides,
});

/** The problems assertValidOidcSettings answers, by path; [] when valid. */
function problems(value: OidcSettings, allowsHttp: (host: string) => boolean = () => false): string[] {
  try {
    assertValidOidcSettings(value, allowsHttp);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
    return ((error as DomainError).details ?? []).map((d) => d.path);
  }
}

describe('assertValidOidcSettings', () => {
  it('takes https issuers, and http ones only on hosts the allow-list names', () => {
    expect(problems(settings())).toEqual([]);
    expect(problems(settings({ issuer: 'http://idp.acme.test' }))).toEqual(['issuer']);
    expect(problems(settings({ issuer: 'http://127.0.0.1:4000' }), (host) => host === '127.0.0.1')).toEqual([]);
    expect(problems(settings({ issuer: 'http://[::1]:4000' }), (host) => host === '::1')).toEqual([]);
    expect(problems(settings({ issuer: 'ftp://idp.acme.test' }), () => true)).toEqual(['issuer']);
    expect(problems(settings({ issuer: 'idp.acme.test' }))).toEqual(['issuer']);
    expect(problems(settings({ issuer: 'https://idp.acme.test/?tenant=1' }))).toEqual(['issuer']);
    expect(problems(settings({ issuer: 'https://user:pw@idp.acme.test' }))).toEqual(['issuer']);
  });

  it('answers every problem at once: scopes without openid, empty claim names and client id, bad redirects and roles', () => {
    const bad = settings({
      clientId: ' ',
      scopes: 'email profile',
      claims: { email: '', name: 'name', groups: ' ' },
      allowedRedirects: ['javascript:alert(1)', 'https://ok.test/'],
      roleMappings: [{ value: 'x', role: 'owner' as never }],
      defaultRole: 'root' as never,
    });
    expect(problems(bad)).toEqual([
      'clientId',
      'scopes',
      'claims.email',
      'claims.groups',
      'allowedRedirects[0]',
      'roleMappings[0].role',
      'defaultRole',
    ]);
    expect(problems(settings({ scopes: 'openid "quoted"' }))).toEqual(['scopes']);
  });
});

describe('identityFromClaims', () => {
  const ID = { iss: 'https://idp.acme.test', sub: 's-1', email_verified: true };

  it('maps the issuer and subject, email (lower-cased), names and the role from the configured claims', () => {
    expect(identityFromClaims(settings(), { ...ID, email: ' Ada@Corp.TEST ', name: 'Ada King Lovelace', groups: ['staff'] })).toEqual({
      issuer: 'https://idp.acme.test',
      subject: 's-1',
      email: 'ada@corp.test',
      role: 'member',
      firstName: 'Ada',
      lastName: 'King Lovelace',
    });
    // given_name and family_name, when sent, win over the name split.
    expect(
      identityFromClaims(settings(), { ...ID, email: 'a@corp.test', name: 'A B C', given_name: 'Ada', family_name: 'Lovelace' }),
    ).toMatchObject({
      firstName: 'Ada',
      lastName: 'Lovelace',
    });
    expect(identityFromClaims(settings(), { ...ID, email: 'a@corp.test' })).toEqual({
      issuer: 'https://idp.acme.test',
      subject: 's-1',
      email: 'a@corp.test',
      role: 'viewer',
      firstName: null,
      lastName: null,
    });
    const custom = settings({ claims: { email: 'upn', name: 'display', groups: 'roles' } });
    expect(
      identityFromClaims(custom, { ...ID, upn: 'b@corp.test', display: 'Bo', roles: 'admins', email: 'other@corp.test' }),
    ).toMatchObject({
      email: 'b@corp.test',
      role: 'admin',
      firstName: 'Bo',
      lastName: null,
    });
  });

  it('answers why, instead of an identity, when the claims name no usable email or no subject', () => {
    const invalid = (reason: unknown) => ({ code: 'OIDC_INVALID', reason });
    expect(identityFromClaims(settings(), { ...ID })).toEqual(invalid("The provider did not send the email claim 'email'"));
    expect(identityFromClaims(settings(), { ...ID, email: 42 })).toEqual(invalid(expect.stringContaining('did not send')));
    expect(identityFromClaims(settings(), { ...ID, email: 'not an email' })).toEqual(invalid('The email claim is not a usable email'));
    expect(identityFromClaims(settings(), { ...ID, email: `${'a'.repeat(320)}@corp.test` })).toEqual(
      invalid('The email claim is not a usable email'),
    );
    expect(identityFromClaims(settings(), { ...ID, sub: undefined, email: 'a@corp.test' })).toEqual(
      invalid('The ID token has no iss or sub'),
    );
  });

  it('refuses an email the provider does not say is verified (missing or false), unless the settings allow it', () => {
    const email = 'a@corp.test';
    expect(identityFromClaims(settings(), { ...ID, email, email_verified: undefined })).toEqual({
      code: 'OIDC_EMAIL_NOT_VERIFIED',
      reason: 'The provider did not send email_verified: the email is not known to be verified',
    });
    expect(identityFromClaims(settings(), { ...ID, email, email_verified: false })).toEqual({
      code: 'OIDC_EMAIL_NOT_VERIFIED',
      reason: 'The provider says the email is not verified',
    });
    expect(identityFromClaims(settings(), { ...ID, email, email_verified: 'true' })).toMatchObject({ email });
    const lenient = settings({ allowUnverifiedEmail: true });
    expect(identityFromClaims(lenient, { ...ID, email, email_verified: undefined })).toMatchObject({ email });
    expect(identityFromClaims(lenient, { ...ID, email, email_verified: false })).toMatchObject({ email });
  });
});

describe('roleForGroups', () => {
  it('gives the first mapping that matches, in the order of the mappings, else the default role', () => {
    expect(roleForGroups(settings(), ['staff', 'admins'])).toBe('admin');
    expect(roleForGroups(settings(), ['staff'])).toBe('member');
    expect(roleForGroups(settings(), ['other'])).toBe('viewer');
    expect(roleForGroups(settings({ defaultRole: 'member' }), [])).toBe('member');
  });
});
