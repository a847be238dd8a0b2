import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * SAML as IdPs send it, against a separate identity provider process (samlify, its own key and
 * certificate, test/support/saml-idp-process.mjs) on a loopback port. The IdP reads our SP
 * metadata over HTTP, verifies our signed AuthnRequests and logout messages, encrypts
 * assertions to the certificate our metadata publishes, and starts logouts and sign-ins of its
 * own. Each spec uses a fresh enterprise organization.
 */

const AFTER_LOGIN = 'https://app.example.test/after';
let counter = 0;
const newEmail = (who = 'user') => `${who}-${Date.now().toString(36)}-${++counter}@corp.test`;

interface Tokens {
  accessToken: string;
  refreshToken: string;
}

interface SsoAnswer {
  verified: boolean;
  requestId?: string;
  sigAlg?: string;
  SAMLResponse?: string;
  RelayState?: string | null;
  sessionIndex?: string;
  error?: string;
}

function expectError(res: Response, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { error: expect.objectContaining({ code, message: expect.any(String), status }) },
  });
}

/** The XML of a (base64) SAMLResponse. */
const decoded = (samlResponse: string) => Buffer.from(samlResponse, 'base64').toString('utf8');

describe('SAML against a separate IdP process (samlify)', () => {
  let t: TestApp;
  let idpProcess: ChildProcess;
  let idpBase: string;
  let spBase: string;

  beforeAll(async () => {
    idpProcess = spawn(process.execPath, [`${__dirname}/support/saml-idp-process.mjs`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const firstLine = await new Promise<string>((resolve, reject) => {
      createInterface({ input: idpProcess.stdout! }).once('line', resolve);
      idpProcess.once('exit', (code) => reject(new Error(`the IdP process exited (${code})`)));
    });
    idpBase = `http://127.0.0.1:${(JSON.parse(firstLine) as { port: number }).port}`;
    // The IdP runs on loopback: the outbound allow-list lets the metadata fetch and its http URLs through.
    t = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '1000', OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    // The IdP fetches our metadata over HTTP: the app listens on a loopback port too.
    const server = t.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    spBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    idpProcess?.kill('SIGTERM');
    await t?.close();
  });

  const idp = async <T = Record<string, unknown>>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> => {
    const res = await fetch(path.startsWith('http') ? path : `${idpBase}${path}`, init);
    return { status: res.status, body: (await res.json()) as T };
  };
  const idpMetadata = async () => (await fetch(`${idpBase}/metadata`)).text();

  /** The IdP (re)reads the organization's SP metadata; `encryptionCert` picks one of two during an overlap. */
  async function idpTrusts(org: TestOrg, options: { encrypt?: boolean; encryptionCert?: 'first' | 'last' } = {}) {
    const res = await idp<{ signingCerts: number }>('/sp', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadataUrl: `${spBase}/api/auth/saml/${org.slug}/metadata`, ...options }),
    });
    expect(res.status).toBe(200);
    return res.body;
  }

  const putSettings = (org: TestOrg, body: Record<string, unknown>) => t.http().put('/api/auth/saml').set(bearer(org.admin)).send(body);

  /** An enterprise organization set up from the IdP's metadata URL, and trusted by the IdP. */
  async function samlOrg(overrides: Record<string, unknown> = {}, trust: { encrypt?: boolean } = {}): Promise<TestOrg> {
    const org = await t.newOrg('enterprise');
    const res = await putSettings(org, { idpMetadataUrl: `${idpBase}/metadata`, allowedRedirects: [AFTER_LOGIN], ...overrides });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    await idpTrusts(org, trust);
    return org;
  }

  /** Starts a login at our SP and takes its redirect to the IdP, which verifies the AuthnRequest and answers for `email`. */
  async function atIdp(org: TestOrg, email: string, tamper?: (url: URL) => void): Promise<{ status: number; body: SsoAnswer }> {
    const login = await t.http().get(`/api/auth/saml/${org.slug}/login`).query({ redirect: AFTER_LOGIN });
    expect(login.status).toBe(302);
    const location = new URL(login.headers.location as string);
    expect(location.origin + location.pathname).toBe(`${idpBase}/sso`);
    tamper?.(location);
    return idp<SsoAnswer>(location.toString(), { headers: { 'x-login-email': email } });
  }

  const acs = (org: TestOrg, samlResponse: string) =>
    t.http().post(`/api/auth/saml/${org.slug}/acs`).type('form').set('Accept', 'application/json').send({ SAMLResponse: samlResponse });

  /** A complete SP-initiated sign-in through the IdP process: the token pair, and what the IdP said. */
  async function signIn(org: TestOrg, email: string): Promise<{ tokens: Tokens; sso: SsoAnswer }> {
    const sso = await atIdp(org, email);
    expect(sso).toMatchObject({ status: 200, body: { verified: true } });
    const res = await acs(org, sso.body.SAMLResponse!);
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { accessToken: expect.any(String) } });
    return { tokens: res.body as Tokens, sso: sso.body };
  }

  const refresh = (tokens: Tokens) => t.http().post('/api/auth/refresh').send({ refreshToken: tokens.refreshToken });
  const me = (tokens: Tokens) => t.http().get('/api/auth/me').set(bearer(tokens));

  async function metadataXml(org: TestOrg): Promise<string> {
    const res = await fetch(`${spBase}/api/auth/saml/${org.slug}/metadata`);
    expect(res.status).toBe(200);
    return res.text();
  }

  const certificatesIn = (xml: string, use: 'signing' | 'encryption') =>
    [...xml.matchAll(new RegExp(`<md:KeyDescriptor use="${use}">[\\s\\S]*?<ds:X509Certificate>([^<]+)</ds:X509Certificate>`, 'g'))].map(
      (m) => m[1],
    );
  const pemBody = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

  async function usersOf(org: TestOrg): Promise<string[]> {
    const list = await t.http().get('/api/users').query({ limit: 100 }).set(bearer(org.admin));
    return (list.body.data as Array<{ email: string }>).map((u) => u.email);
  }

  async function auditOf(org: TestOrg, action: string) {
    const res = await t.http().get('/api/audit-events').query({ action, limit: 100 }).set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body.data as Array<{ action: string; actor: Record<string, unknown>; target: Record<string, unknown>; changes: unknown }>;
  }

  describe('SP metadata and signed AuthnRequests', () => {
    it('publishes signing and encryption certificates, single logout, AuthnRequestsSigned and WantAssertionsSigned', async () => {
      const org = await samlOrg();
      const xml = await metadataXml(org);
      expect(xml).toContain('AuthnRequestsSigned="true"');
      expect(xml).toContain('WantAssertionsSigned="true"');
      expect(xml).toContain(`<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="`);
      expect(xml).toMatch(/SingleLogoutService [^>]*Location="[^"]*\/api\/auth\/saml\/[^/]+\/slo"/);
      const keys = await t.http().get('/api/auth/saml/sp-keys').set(bearer(org.admin));
      expect(keys.status).toBe(200);
      expect(keys.body.data).toEqual([
        {
          id: expect.any(String),
          certificate: expect.stringContaining('BEGIN CERTIFICATE'),
          fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
          current: true,
          createdAt: expect.any(String),
          retireAt: null,
        },
      ]);
      expect(JSON.stringify(keys.body)).not.toContain('PRIVATE KEY');
      expect(certificatesIn(xml, 'signing')).toEqual([pemBody(keys.body.data[0].certificate)]);
      expect(certificatesIn(xml, 'encryption')).toEqual([pemBody(keys.body.data[0].certificate)]);
    });

    it('signs every AuthnRequest (RSA-SHA256); the IdP verifies it, and refuses a tampered one', async () => {
      const org = await samlOrg();
      const signed = await atIdp(org, newEmail());
      expect(signed).toMatchObject({
        status: 200,
        body: { verified: true, requestId: expect.any(String), sigAlg: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256' },
      });
      const tampered = await atIdp(org, newEmail(), (url) => url.searchParams.set('RelayState', 'https://evil.example.test/'));
      expect(tampered).toMatchObject({ status: 400, body: { verified: false } });
      const unsigned = await atIdp(org, newEmail(), (url) => url.searchParams.delete('Signature'));
      expect(unsigned).toMatchObject({ status: 400, body: { verified: false } });
      const seen = await idp<{ authnRequests: Array<{ verified: boolean; requestId?: string }> }>('/seen');
      expect(seen.body.authnRequests.slice(-3).map((r) => r.verified)).toEqual([true, false, false]);
    });
  });

  describe('encrypted assertions', () => {
    it('accepts an assertion encrypted to our certificate', async () => {
      const org = await samlOrg({}, { encrypt: true });
      const email = newEmail('enc');
      const sso = await atIdp(org, email);
      const xml = decoded(sso.body.SAMLResponse!);
      expect(xml).toContain('EncryptedAssertion');
      expect(xml).not.toContain(email);
      const res = await acs(org, sso.body.SAMLResponse!);
      expect(res.status).toBe(200);
      expect((await me(res.body as Tokens)).body).toMatchObject({ user: { email } });
    });

    it('with wantAssertionsEncrypted, refuses a plaintext assertion with SAML_INVALID and signs in no one', async () => {
      const org = await samlOrg({ wantAssertionsEncrypted: true }, { encrypt: false });
      const email = newEmail('plain');
      const sso = await atIdp(org, email);
      expect(decoded(sso.body.SAMLResponse!)).not.toContain('EncryptedAssertion');
      expectError(await acs(org, sso.body.SAMLResponse!), 401, 'SAML_INVALID');
      expect(await usersOf(org)).not.toContain(email);
      // The same organization takes the IdP's encrypted assertions.
      await idpTrusts(org, { encrypt: true });
      const encrypted = newEmail('enc');
      await signIn(org, encrypted);
      expect(await usersOf(org)).toContain(encrypted);
    });
  });

  describe('SP key rotation', () => {
    it('keeps the previous pair for decryption and in the metadata during the overlap, signs with the new one, and retires it', async () => {
      const org = await samlOrg({}, { encrypt: true });
      const before = (await t.http().get('/api/auth/saml/sp-keys').set(bearer(org.admin))).body.data as Array<{
        id: string;
        certificate: string;
      }>;

      const rotated = await t.http().post('/api/auth/saml/sp-keys/rotate').set(bearer(org.admin)).send({ overlapHours: 24 });
      expect(rotated.status).toBe(200);
      const [current, previous] = rotated.body.data as Array<{
        id: string;
        certificate: string;
        current: boolean;
        retireAt: string | null;
      }>;
      expect(current).toMatchObject({ current: true, retireAt: null });
      expect(previous).toMatchObject({ id: before[0].id, current: false });
      const overlapHours = (Date.parse(previous.retireAt!) - Date.now()) / 3_600_000;
      expect(overlapHours).toBeGreaterThan(23.9);
      expect(overlapHours).toBeLessThanOrEqual(24);

      // The metadata lists both, the new one first.
      const during = await metadataXml(org);
      expect(certificatesIn(during, 'signing')).toEqual([pemBody(current.certificate), pemBody(previous.certificate)]);
      expect(certificatesIn(during, 'encryption')).toEqual([pemBody(current.certificate), pemBody(previous.certificate)]);

      // New AuthnRequests are signed with the new key: an IdP that knows only the old certificate refuses them.
      expect(await atIdp(org, newEmail())).toMatchObject({ status: 400, body: { verified: false } });

      // An IdP that took the new signing certificate but still encrypts to the old one: accepted during the overlap.
      await idpTrusts(org, { encrypt: true, encryptionCert: 'last' });
      const email = newEmail('old-cert');
      const { tokens } = await signIn(org, email);
      expect((await me(tokens)).body).toMatchObject({ user: { email } });

      // The audit log records the rotation, with ids and fingerprints, never a private key.
      const events = await auditOf(org, 'saml.sp_keys_rotated');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ action: 'saml.sp_keys_rotated', actor: { type: 'user', id: org.admin.id } });
      expect(JSON.stringify(events[0].changes)).toContain(current.id);
      expect(JSON.stringify(events)).not.toMatch(/PRIVATE KEY|privateKey/);

      // Retired now: only the new pair is published, and the old certificate no longer decrypts.
      const retired = await t.http().delete('/api/auth/saml/sp-keys/previous').set(bearer(org.admin));
      expect(retired.status).toBe(200);
      expect(retired.body.data).toEqual([expect.objectContaining({ id: current.id, current: true })]);
      const after = await metadataXml(org);
      expect(certificatesIn(after, 'encryption')).toEqual([pemBody(current.certificate)]);
      expect(certificatesIn(after, 'signing')).toEqual([pemBody(current.certificate)]);
      const late = newEmail('too-late');
      const sso = await atIdp(org, late);
      expect(sso.body.verified).toBe(true);
      expectError(await acs(org, sso.body.SAMLResponse!), 401, 'SAML_INVALID');
      expect(await usersOf(org)).not.toContain(late);
      expect(await auditOf(org, 'saml.sp_keys_rotated')).toHaveLength(2);
      expectError(await t.http().delete('/api/auth/saml/sp-keys/previous').set(bearer(org.admin)), 404, 'NOT_FOUND');
    });

    it('is for signed-in admins: a member gets FORBIDDEN', async () => {
      const org = await samlOrg();
      expectError(await t.http().post('/api/auth/saml/sp-keys/rotate').set(bearer(org.member)).send({}), 403, 'FORBIDDEN');
      expectError(
        await t.http().post('/api/auth/saml/sp-keys/rotate').set(bearer(org.admin)).send({ overlapHours: -1 }),
        400,
        'VALIDATION_FAILED',
      );
      expect((await t.http().get('/api/auth/saml/sp-keys').set(bearer(org.admin))).body.data).toHaveLength(1);
    });
  });

  describe('single logout', () => {
    it('SP-initiated: ends the session, sends the IdP a signed LogoutRequest, and takes its signed LogoutResponse', async () => {
      const org = await samlOrg();
      const email = newEmail('slo');
      const { tokens, sso } = await signIn(org, email);
      const other = await signIn(org, email);

      const res = await t.http().post(`/api/auth/saml/${org.slug}/logout`).set(bearer(tokens)).send({ refreshToken: tokens.refreshToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ sessionsEnded: 1, logoutUrl: expect.stringMatching(new RegExp(`^${idpBase}/slo\\?SAMLRequest=`)) });
      // This session ends: its refresh token and every access token of the user.
      expectError(await refresh(tokens), 401, 'INVALID_CREDENTIALS');
      expect((await me(tokens)).status).toBe(401);
      // The user's other session carries on through its refresh token.
      expect((await refresh(other.tokens)).status).toBe(200);

      // The IdP verifies our LogoutRequest: signed, naming the NameID and SessionIndex of this session.
      const atIdp = await idp<{ verified: boolean; nameID: string; sessionIndex: string; sigAlg: string; logoutResponseUrl: string }>(
        res.body.logoutUrl,
      );
      expect(atIdp).toMatchObject({
        status: 200,
        body: {
          verified: true,
          nameID: email,
          sessionIndex: sso.sessionIndex,
          sigAlg: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
        },
      });
      // The IdP's signed LogoutResponse comes back to our SLO endpoint.
      const back = new URL(atIdp.body.logoutResponseUrl);
      const done = await t.http().get(`${back.pathname}${back.search}`);
      expect({ status: done.status, body: done.body }).toEqual({ status: 200, body: { status: 'logged_out', sessionsEnded: 0 } });
      // A LogoutResponse without its signature is refused.
      back.searchParams.delete('Signature');
      expectError(await t.http().get(`${back.pathname}${back.search}`), 401, 'SAML_INVALID');

      const signedOut = await auditOf(org, 'auth.signed_out');
      expect(signedOut).toEqual([expect.objectContaining({ actor: expect.objectContaining({ type: 'user', name: email, via: 'saml' }) })]);
    });

    it('SP-initiated: is for sessions that began with SAML in that organization', async () => {
      const org = await samlOrg();
      expectError(await t.http().post(`/api/auth/saml/${org.slug}/logout`).set(bearer(org.member)).send({}), 403, 'FORBIDDEN');
      const elsewhere = await samlOrg();
      const { tokens } = await signIn(elsewhere, newEmail());
      expectError(await t.http().post(`/api/auth/saml/${org.slug}/logout`).set(bearer(tokens)).send({}), 404, 'NOT_FOUND');
      expect((await refresh(tokens)).status).toBe(200);
    });

    it('IdP-initiated: a signed LogoutRequest ends every SAML session of that NameID, not those of others, and gets a signed LogoutResponse', async () => {
      const org = await samlOrg();
      const ada = newEmail('ada');
      const bob = newEmail('bob');
      const adaFirst = await signIn(org, ada);
      const adaSecond = await signIn(org, ada);
      const bobs = await signIn(org, bob);

      // Unsigned, or signed for another message: refused, and nothing ends.
      const unsigned = await idp<{ url: string }>(`/logout-request?email=${encodeURIComponent(bob)}&signed=0`);
      const unsignedUrl = new URL(unsigned.body.url);
      expect(unsignedUrl.searchParams.has('Signature')).toBe(false);
      expectError(await t.http().get(`${unsignedUrl.pathname}${unsignedUrl.search}`), 401, 'SAML_INVALID');
      const forAda = new URL((await idp<{ url: string }>(`/logout-request?email=${encodeURIComponent(ada)}`)).body.url);
      const forBob = new URL((await idp<{ url: string }>(`/logout-request?email=${encodeURIComponent(bob)}`)).body.url);
      forBob.searchParams.set('Signature', forAda.searchParams.get('Signature')!);
      expectError(await t.http().get(`${forBob.pathname}${forBob.search}`), 401, 'SAML_INVALID');
      // Over the POST binding, an unsigned LogoutRequest is refused too.
      const unsignedXml = (await import('node:zlib')).inflateRawSync(Buffer.from(unsignedUrl.searchParams.get('SAMLRequest')!, 'base64'));
      const posted = await t
        .http()
        .post(unsignedUrl.pathname)
        .type('form')
        .send({ SAMLRequest: unsignedXml.toString('base64') });
      expectError(posted, 401, 'SAML_INVALID');
      // Bob's session lives on (refresh tokens rotate: keep the new one).
      const bobStill = await refresh(bobs.tokens);
      expect(bobStill.status).toBe(200);
      expect(await auditOf(org, 'auth.signed_out')).toEqual([]);

      // Signed: both of Ada's sessions end; Bob's does not.
      const res = await t.http().get(`${forAda.pathname}${forAda.search}`);
      expect(res.status).toBe(302);
      const answer = new URL(res.headers.location as string);
      expect(answer.origin + answer.pathname).toBe(`${idpBase}/slo`);
      expect(answer.searchParams.has('SAMLResponse')).toBe(true);
      expectError(await refresh(adaFirst.tokens), 401, 'INVALID_CREDENTIALS');
      expectError(await refresh(adaSecond.tokens), 401, 'INVALID_CREDENTIALS');
      expect((await me(adaSecond.tokens)).status).toBe(401);
      const bobRefreshed = await refresh(bobStill.body as Tokens);
      expect(bobRefreshed.status).toBe(200);
      expect((await me(bobRefreshed.body as Tokens)).status).toBe(200);
      // The IdP verifies our LogoutResponse.
      expect(await idp(answer.toString())).toMatchObject({
        status: 200,
        body: { verified: true, sigAlg: expect.stringContaining('rsa-sha256') },
      });
      // The audit log: Ada signed out through SAML.
      const signedOut = await auditOf(org, 'auth.signed_out');
      expect(signedOut).toEqual([
        expect.objectContaining({ target: expect.objectContaining({ name: ada }), actor: expect.objectContaining({ via: 'saml' }) }),
      ]);
      const rows = await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM saml_sessions WHERE organization_id = $1', [org.id]);
      expect(rows).toEqual([{ n: 1 }]);
    });
  });

  describe('IdP-initiated sign-in', () => {
    it('is refused unless the organization allows it; when allowed, each response signs in once', async () => {
      const org = await samlOrg();
      const email = newEmail('unsolicited');
      const first = await idp<SsoAnswer>(`/initiate?email=${encodeURIComponent(email)}`);
      expectError(await acs(org, first.body.SAMLResponse!), 401, 'SAML_INVALID');
      expect(await usersOf(org)).not.toContain(email);

      const settings = (await t.http().get('/api/auth/saml').set(bearer(org.admin))).body;
      const { sp: _sp, ...body } = settings;
      const put = await putSettings(org, { ...body, allowIdpInitiated: true });
      expect({ status: put.status, allowIdpInitiated: put.body.allowIdpInitiated }).toEqual({ status: 200, allowIdpInitiated: true });

      const second = await idp<SsoAnswer>(`/initiate?email=${encodeURIComponent(email)}`);
      const accepted = await acs(org, second.body.SAMLResponse!);
      expect(accepted.status).toBe(200);
      expect((await me(accepted.body as Tokens)).body).toMatchObject({ user: { email } });
      // The same response again, to this instance or any other: refused (the replay cache is a table).
      expectError(await acs(org, second.body.SAMLResponse!), 401, 'SAML_INVALID');
      const cached = await t.app.get(DataSource).query('SELECT expires_at FROM saml_assertions WHERE organization_id = $1', [org.id]);
      expect(cached).toHaveLength(1);
      expect(new Date(cached[0].expires_at).getTime()).toBeGreaterThan(Date.now());
      // SP-initiated sign-ins still work alongside.
      await signIn(org, newEmail());
    });
  });

  describe('metadata import', () => {
    it('from a URL and from a file: entity id, SSO and SLO URLs, certificate', async () => {
      const org = await samlOrg();
      const fromUrl = (await t.http().get('/api/auth/saml').set(bearer(org.admin))).body;
      const expected = {
        idpEntityId: `${idpBase}/metadata`,
        idpSsoUrl: `${idpBase}/sso`,
        idpSloUrl: `${idpBase}/slo`,
        idpCertificates: [expect.stringContaining('BEGIN CERTIFICATE')],
      };
      expect(fromUrl).toMatchObject(expected);

      const other = await t.newOrg('enterprise');
      const fromFile = await putSettings(other, { idpMetadataXml: await idpMetadata() });
      expect({ status: fromFile.status, body: fromFile.body }).toMatchObject({ status: 200, body: expected });
      expect(fromFile.body.idpCertificates).toEqual(fromUrl.idpCertificates);
    });

    it('refuses bad metadata, an unreachable or forbidden URL, with VALIDATION_FAILED, and saves nothing', async () => {
      const org = await t.newOrg('enterprise');
      const bad = await putSettings(org, { idpMetadataXml: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"><oops' });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details).toEqual([{ path: 'idpMetadataXml', message: expect.stringContaining('not XML') }]);
      const doctype = await putSettings(org, { idpMetadataXml: `<!DOCTYPE x [<!ENTITY a "b">]>${await idpMetadata()}` });
      expectError(doctype, 400, 'VALIDATION_FAILED');
      const notMetadata = await putSettings(org, { idpMetadataUrl: `${idpBase}/seen` });
      expect({ status: notMetadata.status, details: notMetadata.body.error?.details }).toEqual({
        status: 400,
        details: [{ path: 'idpMetadataUrl', message: expect.any(String) }],
      });
      const missing = await putSettings(org, { idpMetadataUrl: `${idpBase}/no-such-metadata` });
      expect({ status: missing.status, details: missing.body.error?.details }).toEqual({
        status: 400,
        details: [{ path: 'idpMetadataUrl', message: 'the server answered 404' }],
      });
      // The SSRF guard: a link-local (cloud metadata) address is never fetched.
      const forbidden = await putSettings(org, { idpMetadataUrl: 'http://169.254.169.254/latest/meta-data' });
      expect({ status: forbidden.status, details: forbidden.body.error?.details }).toEqual({
        status: 400,
        details: [{ path: 'idpMetadataUrl', message: expect.any(String) }],
      });
      expectError(await t.http().get('/api/auth/saml').set(bearer(org.admin)), 404, 'NOT_FOUND');
    });
  });
});
