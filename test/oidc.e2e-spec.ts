import { createHash, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { AppConfig } from '../src/config/app-config';
import { ProviderAccount, startOidcProvider, TestOidcProvider } from './support/oidc-provider';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

/**
 * OpenID Connect sign-in per organization, against a real provider (oidc-provider, in a process
 * of its own on loopback): each organization registers its own client there with its callback
 * URL. Each refusal is checked for the 401 OIDC_INVALID envelope, no tokens, no user written,
 * and a failed sign-in in the organization's audit log.
 */

const APP = 'https://app.example.test/';
const AFTER_LOGIN = 'https://app.example.test/after';

interface OidcOrg extends TestOrg {
  clientId: string;
  clientSecret: string;
}

interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: string;
  expiresIn: number;
}

interface AuditEvent {
  action: string;
  outcome: string;
  actor: { type: string; id: string | null; name: string | null; via: string | null };
  target: { type: string; id: string | null; name: string | null } | null;
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null;
}

let emailCounter = 0;
const newEmail = (who = 'user') => `${who}-${Date.now().toString(36)}-${++emailCounter}@corp.test`;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

function expectOidcInvalid(res: Response, code = 'OIDC_INVALID'): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 401,
    body: { error: { code, message: expect.any(String), status: 401 } },
  });
}

describe('OIDC sign-in', () => {
  let t: TestApp;
  let idp: TestOidcProvider;
  let publicUrl: string;

  beforeAll(async () => {
    idp = await startOidcProvider();
    // Every sign-in here comes from one address: room above the per-address limit of the SSO routes.
    t = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '1000', OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    publicUrl = t.app.get(AppConfig).publicUrl;
  });
  afterAll(async () => {
    await t?.close();
    await idp?.close();
  });

  const callbackUrl = (slug: string) => `${publicUrl}/api/auth/oidc/${slug}/callback`;
  const db = () => t.app.get(DataSource);
  const usersOf = (org: TestOrg) => db().query('SELECT * FROM users WHERE organization_id = $1 ORDER BY email', [org.id]);
  const userByEmail = async (email: string) => (await db().query('SELECT * FROM users WHERE email = $1', [email.toLowerCase()]))[0];
  const me = (tokens: { accessToken: string }) => t.http().get('/api/auth/me').set(bearer(tokens));

  const settings = (client: { clientId: string; clientSecret?: string }, overrides: Record<string, unknown> = {}) => ({
    issuer: idp.issuer,
    clientId: client.clientId,
    ...(client.clientSecret ? { clientSecret: client.clientSecret } : {}),
    roleMappings: [
      { value: 'admins', role: 'admin' },
      { value: 'staff', role: 'member' },
    ],
    defaultRole: 'viewer',
    allowedRedirects: [APP],
    ...overrides,
  });

  const putSettings = (org: TestOrg, body: Record<string, unknown>) => t.http().put('/api/auth/oidc').set(bearer(org.admin)).send(body);

  /** A fresh enterprise organization with its own client at the provider and OIDC configured. */
  async function oidcOrg(overrides: Record<string, unknown> = {}): Promise<OidcOrg> {
    const org = await t.newOrg('enterprise');
    const client = await idp.register([callbackUrl(org.slug)]);
    const res = await putSettings(org, settings(client, overrides));
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    return { ...org, ...client };
  }

  /** Starts a sign-in at our login route; answers the provider's authorization URL. */
  async function startLogin(org: TestOrg, redirect?: string): Promise<URL> {
    const res = await t
      .http()
      .get(`/api/auth/oidc/${org.slug}/login`)
      .query(redirect ? { redirect } : {});
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 302 });
    return new URL(res.headers.location as string);
  }

  /** Sends the provider's redirect to our callback (path and query, as the browser would), asking for JSON. */
  const callback = (back: URL, slug?: string, accept = 'application/json') => {
    const path = slug ? back.pathname.replace(/\/oidc\/[^/]+\/callback$/, `/oidc/${slug}/callback`) : back.pathname;
    return t.http().get(`${path}${back.search}`).set('Accept', accept);
  };

  /** Login at our route, then at the provider as `account`: answers where the provider sends the browser back. */
  async function throughProvider(org: TestOrg, account: ProviderAccount, redirect?: string): Promise<URL> {
    return idp.authorize((await startLogin(org, redirect)).href, account);
  }

  /** A complete sign-in; answers the token pair. */
  async function signIn(org: TestOrg, account: ProviderAccount): Promise<TokenPair> {
    const res = await callback(await throughProvider(org, account));
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    return res.body as TokenPair;
  }

  async function auditOf(org: TestOrg, action: string): Promise<AuditEvent[]> {
    const res = await t.http().get('/api/audit-events').query({ action, limit: 100 }).set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body.data as AuditEvent[];
  }

  /** Sends the callback: refused with `code`, the organization's users as they were, and one more failed sign-in in its log. */
  async function expectRefused(
    org: TestOrg,
    send: () => Promise<Response>,
    neverProvisioned: string[] = [],
    code = 'OIDC_INVALID',
  ): Promise<Response> {
    const users = await usersOf(org);
    const failures = (await auditOf(org, 'auth.signed_in')).filter((e) => e.outcome !== 'success').length;
    const res = await send();
    expectOidcInvalid(res, code);
    expect(res.body).not.toHaveProperty('accessToken');
    expect(await usersOf(org)).toEqual(users);
    for (const email of neverProvisioned) expect(await userByEmail(email)).toBeUndefined();
    const after = (await auditOf(org, 'auth.signed_in')).filter((e) => e.outcome !== 'success');
    expect(after).toHaveLength(failures + 1);
    expect(after[0]).toMatchObject({ outcome: expect.stringMatching(/^(failure|denied)$/), actor: { type: 'anonymous', via: 'oidc' } });
    return res;
  }

  describe('sign-in', () => {
    it('signs a new user in end to end: code flow with PKCE, state and nonce; the user created with the mapped role; via oidc', async () => {
      const org = await oidcOrg();
      const email = newEmail('ada');

      const authorize = await startLogin(org);
      expect(`${authorize.origin}${authorize.pathname}`).toBe(`${idp.issuer}/auth`);
      const params = Object.fromEntries(authorize.searchParams);
      expect(params).toEqual({
        response_type: 'code',
        client_id: org.clientId,
        redirect_uri: callbackUrl(org.slug),
        scope: 'openid email profile',
        state: expect.stringMatching(/^[\w-]{32,}$/),
        nonce: expect.stringMatching(/^[\w-]{32,}$/),
        code_challenge: expect.stringMatching(/^[\w-]{43}$/),
        code_challenge_method: 'S256',
      });
      // Kept server-side, for ten minutes: the state only as its hash.
      const [pending] = await db().query('SELECT * FROM oidc_logins WHERE organization_id = $1', [org.id]);
      expect(pending).toMatchObject({ state_hash: sha256(params.state), nonce: params.nonce, redirect: null, used_at: null });
      expect(createHash('sha256').update(pending.code_verifier).digest('base64url')).toBe(params.code_challenge);
      const ttl = new Date(pending.expires_at).getTime() - Date.now();
      expect(ttl).toBeGreaterThan(9 * 60_000);
      expect(ttl).toBeLessThanOrEqual(10 * 60_000);

      const back = await idp.authorize(authorize.href, { email, name: 'Ada Lovelace', groups: ['staff'] });
      expect(`${back.origin}${back.pathname}`).toBe(callbackUrl(org.slug));
      const res = await callback(back);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 200,
        body: { accessToken: expect.any(String), tokenType: 'Bearer', expiresIn: expect.any(Number), refreshToken: expect.any(String) },
      });
      expect(claimsOf(res.body.accessToken)).toMatchObject({ org: org.id, role: 'member', via: 'oidc' });

      const user = await userByEmail(email);
      expect(user).toMatchObject({
        organization_id: org.id,
        role: 'member',
        first_name: 'Ada',
        last_name: 'Lovelace',
        password_hash: null,
      });
      const who = await me(res.body);
      expect(who.status).toBe(200);
      expect(who.body.user).toMatchObject({ id: user.id, email, role: 'member' });
      const [session] = await db().query('SELECT via FROM refresh_tokens WHERE user_id = $1', [user.id]);
      expect(session).toEqual({ via: 'oidc' });
      const [used] = await db().query('SELECT used_at FROM oidc_logins WHERE state_hash = $1', [sha256(params.state)]);
      expect(used.used_at).not.toBeNull();

      const signedIn = (await auditOf(org, 'auth.signed_in')).filter((e) => e.target?.id === user.id);
      expect(signedIn).toEqual([
        expect.objectContaining({
          outcome: 'success',
          actor: expect.objectContaining({ type: 'user', id: user.id, name: email, via: 'oidc' }),
        }),
      ]);
      const created = (await auditOf(org, 'user.created')).filter((e) => e.target?.id === user.id);
      expect(created).toHaveLength(1);
    });

    it('sends a browser back to the allowed redirect with a one-time code, exchanged once (and only at the OIDC route) for a token pair', async () => {
      const org = await oidcOrg();
      const email = newEmail();
      const back = await throughProvider(org, { email, groups: [] }, AFTER_LOGIN);
      const res = await callback(back, undefined, 'text/html,application/xhtml+xml');
      expect({ status: res.status, body: res.body }).toEqual({ status: 302, body: {} });
      const target = new URL(res.headers.location as string);
      expect(`${target.origin}${target.pathname}`).toBe(AFTER_LOGIN);
      const code = target.searchParams.get('code')!;
      expect(code).toMatch(/^[\w-]{43}$/);
      expect(res.headers.location).not.toContain('accessToken');

      // A SAML exchange does not take an OIDC code (and spends it): a fresh sign-in gives another.
      const saml = await t.http().post('/api/auth/saml/exchange').send({ code });
      expect({ status: saml.status, code: saml.body.error?.code }).toEqual({ status: 401, code: 'SAML_INVALID' });
      const again = await callback(await throughProvider(org, { email }, AFTER_LOGIN), undefined, 'text/html');
      const code2 = new URL(again.headers.location as string).searchParams.get('code')!;
      const exchanged = await t.http().post('/api/auth/oidc/exchange').send({ code: code2 });
      expect({ status: exchanged.status, body: exchanged.body }).toEqual({
        status: 200,
        body: { accessToken: expect.any(String), tokenType: 'Bearer', expiresIn: expect.any(Number), refreshToken: expect.any(String) },
      });
      expect(claimsOf(exchanged.body.accessToken)).toMatchObject({ via: 'oidc', role: 'viewer' });
      expect((await me(exchanged.body)).body.user.email).toBe(email);
      expectOidcInvalid(await t.http().post('/api/auth/oidc/exchange').send({ code: code2 }));
      expectOidcInvalid(await t.http().post('/api/auth/oidc/exchange').send({ code: 'not-a-code' }));
    });

    it('refuses a redirect the settings do not allow, before going to the provider', async () => {
      const org = await oidcOrg();
      const res = await t.http().get(`/api/auth/oidc/${org.slug}/login`).query({ redirect: 'https://evil.example.test/after' });
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
      expect(await db().query('SELECT 1 FROM oidc_logins WHERE organization_id = $1', [org.id])).toEqual([]);
    });

    it('maps the groups claim to a role: the first mapping that matches wins, else the default role; a returning user follows the provider', async () => {
      const org = await oidcOrg();
      const cases: Array<[string[], string]> = [
        [['staff', 'admins'], 'admin'],
        [['staff'], 'member'],
        [['unknown'], 'viewer'],
        [[], 'viewer'],
      ];
      for (const [groups, role] of cases) {
        const email = newEmail();
        const tokens = await signIn(org, { email, groups });
        expect({ groups, role: claimsOf(tokens.accessToken).role }).toEqual({ groups, role });
        expect((await userByEmail(email)).role).toBe(role);
      }

      const email = newEmail('grace');
      await signIn(org, { email, name: 'Grace Hopper', groups: ['staff'] });
      const tokens = await signIn(org, { email, name: 'Grace B. Hopper', groups: ['admins'] });
      expect(claimsOf(tokens.accessToken).role).toBe('admin');
      expect(await userByEmail(email)).toMatchObject({ role: 'admin', first_name: 'Grace', last_name: 'B. Hopper' });
      expect((await usersOf(org)).filter((u: { email: string }) => u.email === email)).toHaveLength(1);

      // Another organization's settings map other claims: a default role of member, groups from another claim.
      const other = await oidcOrg({ defaultRole: 'member', claims: { groups: 'roles' } });
      const tokens2 = await signIn(other, { email: newEmail(), groups: ['admins'] });
      expect(claimsOf(tokens2.accessToken).role).toBe('member');
    });

    it('keeps signing in after the provider rotates its signing key (a new kid is fetched from its JWKS)', async () => {
      const org = await oidcOrg();
      const email = newEmail();
      await signIn(org, { email, groups: ['staff'] });
      const before = await idp.jwksKids();
      const kid = await idp.rotateKey();
      expect(await idp.jwksKids()).toEqual([kid]);
      expect(before).not.toContain(kid);
      const tokens = await signIn(org, { email, groups: ['staff'] });
      expect(claimsOf(tokens.accessToken)).toMatchObject({ via: 'oidc', role: 'member' });
    });
  });

  describe('refusals', () => {
    it('refuses a callback whose state is not one this organization sent (and the real one still works once)', async () => {
      const org = await oidcOrg();
      const email = newEmail();
      const back = await throughProvider(org, { email });
      const forged = new URL(back);
      forged.searchParams.set('state', 'a-state-nobody-sent-aaaaaaaaaaaaaaaaaaaaaaaaa');
      await expectRefused(org, () => callback(forged), [email]);
      const noState = new URL(back);
      noState.searchParams.delete('state');
      await expectRefused(org, () => callback(noState), [email]);

      expect((await callback(back)).status).toBe(200);
      // Used: a replay of the same callback is refused.
      await expectRefused(org, () => callback(back));
    });

    it('refuses an expired sign-in (ten minutes)', async () => {
      const org = await oidcOrg();
      const email = newEmail();
      const back = await throughProvider(org, { email });
      await db().query(`UPDATE oidc_logins SET expires_at = now() - interval '1 second' WHERE organization_id = $1`, [org.id]);
      await expectRefused(org, () => callback(back), [email]);
    });

    it.each([
      ['nonce', { nonce: 'a-nonce-we-never-sent' }],
      ['audience (an ID token for another client)', { aud: 'another-client' }],
      ['issuer', { iss: 'http://127.0.0.1:9/another-issuer' }],
      ['expiry', { exp: Math.floor(Date.now() / 1000) - 600, iat: Math.floor(Date.now() / 1000) - 1200 }],
    ])('refuses an ID token with the wrong %s, signed with the provider key', async (_what, claims) => {
      const org = await oidcOrg();
      const email = newEmail();
      await idp.tamper(email, claims);
      const back = await throughProvider(org, { email, groups: ['admins'] });
      await expectRefused(org, () => callback(back), [email]);
    });

    it("refuses the provider's own refusal", async () => {
      const org = await oidcOrg();
      const login = await startLogin(org);
      const denied = new URL(callbackUrl(org.slug));
      denied.search = new URLSearchParams({ error: 'access_denied', state: login.searchParams.get('state')! }).toString();
      await expectRefused(org, () => callback(denied));
    });

    it('refuses an email the provider does not say is verified (email_verified missing or false) with 401 OIDC_EMAIL_NOT_VERIFIED', async () => {
      const org = await oidcOrg();
      const missing = newEmail();
      const res = await expectRefused(
        org,
        async () => callback(await throughProvider(org, { email: missing, emailVerified: null })),
        [missing],
        'OIDC_EMAIL_NOT_VERIFIED',
      );
      expect(res.body.error.message).toBe('The provider did not send email_verified: the email is not known to be verified');
      const unverified = newEmail();
      const refused = await expectRefused(
        org,
        async () => callback(await throughProvider(org, { email: unverified, emailVerified: false })),
        [unverified],
        'OIDC_EMAIL_NOT_VERIFIED',
      );
      expect(refused.body.error.message).toBe('The provider says the email is not verified');
      // An existing user's email without email_verified does not reach the account either.
      await expectRefused(
        org,
        async () => callback(await throughProvider(org, { email: org.member.email, emailVerified: null })),
        [],
        'OIDC_EMAIL_NOT_VERIFIED',
      );
    });

    it('signs in an email without email_verified when the organization allows unverified emails', async () => {
      const org = await oidcOrg({ allowUnverifiedEmail: true });
      expect((await t.http().get('/api/auth/oidc').set(bearer(org.admin))).body).toMatchObject({ allowUnverifiedEmail: true });
      const email = newEmail();
      const tokens = await signIn(org, { email, emailVerified: null, groups: ['staff'] });
      expect((await me(tokens)).body.user).toMatchObject({ email, role: 'member' });
      await signIn(org, { email: newEmail(), emailVerified: false });
    });

    it('links an existing user by email at the first sign-in only, then finds it by issuer and subject', async () => {
      const org = await oidcOrg();
      const user = await t.addUser(org.id, 'member');
      const sub = `sub-${randomUUID()}`;
      const first = await signIn(org, { email: user.email, sub, groups: ['staff'] });
      expect((await me(first)).body.user).toMatchObject({ id: user.id, email: user.email });
      expect(await db().query('SELECT issuer, subject, user_id FROM oidc_identities WHERE organization_id = $1', [org.id])).toEqual([
        { issuer: idp.issuer, subject: sub, user_id: user.id },
      ]);

      // The email changed at the provider: the same account signs in, its email as it was; no user for the new one.
      const changed = newEmail('moved');
      const again = await signIn(org, { email: changed, sub, groups: ['staff'] });
      expect((await me(again)).body.user).toMatchObject({ id: user.id, email: user.email });
      expect(await userByEmail(changed)).toBeUndefined();

      // Another subject claiming the linked user's email is refused, and links nothing.
      const res = await expectRefused(org, async () =>
        callback(await throughProvider(org, { email: user.email, sub: `sub-${randomUUID()}` })),
      );
      expect(res.body.error.message).toBe('This account cannot sign in here');
      expect(await db().query('SELECT subject FROM oidc_identities WHERE organization_id = $1', [org.id])).toEqual([{ subject: sub }]);

      // A user created by a first sign-in is linked too.
      const created = newEmail('new');
      const otherSub = `sub-${randomUUID()}`;
      const provisioned = (await me(await signIn(org, { email: created, sub: otherSub }))).body.user as { id: string };
      const renamed = await signIn(org, { email: newEmail('renamed'), sub: otherSub });
      expect((await me(renamed)).body.user).toMatchObject({ id: provisioned.id, email: created });
    });

    it('refuses an instance operator, as SAML does: the account unchanged, a denied sign-in in the log', async () => {
      const org = await oidcOrg();
      const operator = await t.addUser(org.id, 'member', { isOperator: true });
      const back = await throughProvider(org, { email: operator.email, groups: ['admins'] });
      await expectRefused(org, () => callback(back));
      expect(await userByEmail(operator.email)).toMatchObject({ role: 'member', is_operator: true });
      const denied = (await auditOf(org, 'auth.signed_in')).find((e) => e.target?.id === operator.id);
      expect(denied).toMatchObject({ outcome: 'denied', actor: { type: 'anonymous', name: operator.email, via: 'oidc' } });
    });

    it("refuses an account of another organization, and one organization's sign-in at another's callback", async () => {
      const org = await oidcOrg();
      const other = await oidcOrg();
      const before = await userByEmail(other.member.email);
      await expectRefused(org, async () => callback(await throughProvider(org, { email: other.member.email, groups: ['admins'] })));
      expect(await userByEmail(other.member.email)).toEqual(before);

      // A's answer sent to B's callback: B knows no such state (and A's is not spent by it).
      const email = newEmail();
      const back = await throughProvider(org, { email });
      await expectRefused(other, () => callback(back, other.slug), [email]);
      const res = await callback(back);
      expect(res.status).toBe(200);
      expect((await userByEmail(email)).organization_id).toBe(org.id);
    });
  });

  describe('settings', () => {
    it('lets an enterprise admin save, read and delete them; the client secret is stored sealed and never returned', async () => {
      const org = await t.newOrg('enterprise');
      const client = await idp.register([callbackUrl(org.slug)]);
      const put = await putSettings(org, settings(client));
      const expected = {
        issuer: idp.issuer,
        clientId: client.clientId,
        clientSecretSet: true,
        scopes: 'openid email profile',
        claims: { email: 'email', name: 'name', groups: 'groups' },
        roleMappings: [
          { value: 'admins', role: 'admin' },
          { value: 'staff', role: 'member' },
        ],
        defaultRole: 'viewer',
        allowedRedirects: [APP],
        allowUnverifiedEmail: false,
        enabled: true,
        client: { redirectUri: callbackUrl(org.slug), loginUrl: `${publicUrl}/api/auth/oidc/${org.slug}/login` },
      };
      expect({ status: put.status, body: put.body }).toEqual({ status: 200, body: expected });
      const get = await t.http().get('/api/auth/oidc').set(bearer(org.admin));
      expect({ status: get.status, body: get.body }).toEqual({ status: 200, body: expected });
      expect(JSON.stringify([put.body, get.body])).not.toContain(client.clientSecret);
      const [row] = await db().query(
        'SELECT settings::text AS settings, sealed_client_secret FROM oidc_settings WHERE organization_id = $1',
        [org.id],
      );
      expect(row.settings).not.toContain(client.clientSecret);
      expect(row.sealed_client_secret).toMatch(/^v1\./);
      expect(row.sealed_client_secret).not.toContain(client.clientSecret);

      // Without clientSecret the stored one is kept: sign-in still works.
      const kept = await putSettings(org, settings({ clientId: client.clientId }, { defaultRole: 'member' }));
      expect({ status: kept.status, defaultRole: kept.body.defaultRole, clientSecretSet: kept.body.clientSecretSet }).toEqual({
        status: 200,
        defaultRole: 'member',
        clientSecretSet: true,
      });
      expect(claimsOf((await signIn(org, { email: newEmail() })).accessToken).role).toBe('member');

      const del = await t.http().delete('/api/auth/oidc').set(bearer(org.admin));
      expect(del.status).toBe(204);
      const gone = await t.http().get('/api/auth/oidc').set(bearer(org.admin));
      expect({ status: gone.status, code: gone.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
      const login = await t.http().get(`/api/auth/oidc/${org.slug}/login`);
      expect({ status: login.status, code: login.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
      const again = await t.http().delete('/api/auth/oidc').set(bearer(org.admin));
      expect({ status: again.status, code: again.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    });

    it('records every change in the audit log, the client secret redacted', async () => {
      const org = await t.newOrg('enterprise');
      const client = await idp.register([callbackUrl(org.slug)]);
      expect((await putSettings(org, settings(client))).status).toBe(200);
      const newSecret = await idp.register([callbackUrl(org.slug)]);
      expect((await putSettings(org, settings(newSecret, { defaultRole: 'member' }))).status).toBe(200);
      expect((await t.http().delete('/api/auth/oidc').set(bearer(org.admin))).status).toBe(204);

      const updated = await auditOf(org, 'oidc.settings_updated');
      expect(updated).toHaveLength(2);
      const [second, first] = updated;
      expect(first).toMatchObject({
        outcome: 'success',
        actor: { type: 'user', id: org.admin.id },
        target: { type: 'oidc_settings', id: org.id, name: idp.issuer },
        changes: { after: { issuer: idp.issuer, clientId: client.clientId, clientSecret: '[redacted]', defaultRole: 'viewer' } },
      });
      expect(second.changes).toEqual({
        before: { clientId: client.clientId, defaultRole: 'viewer' },
        after: { clientId: newSecret.clientId, clientSecret: '[redacted]', defaultRole: 'member' },
      });
      const deleted = await auditOf(org, 'oidc.settings_deleted');
      expect(deleted).toEqual([expect.objectContaining({ target: { type: 'oidc_settings', id: org.id, name: idp.issuer } })]);
      const everything = JSON.stringify([updated, deleted]);
      expect(everything).not.toContain(client.clientSecret);
      expect(everything).not.toContain(newSecret.clientSecret);
    });

    it('refuses an issuer that is not https (except allow-listed hosts), one whose discovery fails, and scopes without openid', async () => {
      const org = await t.newOrg('enterprise');
      const client = await idp.register([callbackUrl(org.slug)]);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ issuer: 'http://idp.example.test' }, 'issuer'],
        [{ issuer: 'not a url' }, 'issuer'],
        // Allow-listed, but nothing answers there; a private address not allow-listed is refused by the SSRF guard.
        [{ issuer: 'http://127.0.0.1:9' }, 'issuer'],
        [{ issuer: 'https://10.1.2.3' }, 'issuer'],
        // The provider is there, but this is not its issuer: no discovery document.
        [{ issuer: `${idp.issuer}/another` }, 'issuer'],
        [{ scopes: 'email profile' }, 'scopes'],
        [{ roleMappings: [{ value: 'x', role: 'owner' }] }, 'roleMappings.0.role'],
      ];
      for (const [overrides, path] of cases) {
        const res = await putSettings(org, settings(client, overrides));
        expect({ overrides, status: res.status, code: res.body.error?.code }).toEqual({
          overrides,
          status: 400,
          code: 'VALIDATION_FAILED',
        });
        expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
      }
      const noSecret = await putSettings(org, settings({ clientId: client.clientId }));
      expect({ status: noSecret.status, details: noSecret.body.error?.details }).toEqual({
        status: 400,
        details: [{ path: 'clientSecret', message: expect.any(String) }],
      });
      expect(await db().query('SELECT 1 FROM oidc_settings WHERE organization_id = $1', [org.id])).toEqual([]);
    });

    it('is enterprise only: other tiers get 403 FEATURE_NOT_AVAILABLE, on the settings and the public routes', async () => {
      const org = await t.newOrg('team');
      const client = await idp.register([callbackUrl(org.slug)]);
      for (const res of [
        await putSettings(org, settings(client)),
        await t.http().get('/api/auth/oidc').set(bearer(org.admin)),
        await t.http().delete('/api/auth/oidc').set(bearer(org.admin)),
      ]) {
        expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'FEATURE_NOT_AVAILABLE' });
      }
      // Configured while enterprise, then downgraded: the public routes refuse too.
      const downgraded = await oidcOrg();
      const operator = await t.addUser(downgraded.id, 'member', { isOperator: true });
      const patched = await t.http().patch(`/api/organizations/${downgraded.id}`).set(bearer(operator)).send({ tier: 'team' });
      expect(patched.status).toBe(200);
      const login = await t.http().get(`/api/auth/oidc/${downgraded.slug}/login`);
      expect({ status: login.status, code: login.body.error?.code }).toEqual({ status: 403, code: 'FEATURE_NOT_AVAILABLE' });
    });

    it('is for admins: members and viewers get 403 FORBIDDEN; an API key gets 403 on PUT and DELETE and changes nothing', async () => {
      const org = await oidcOrg();
      for (const user of [org.member, org.viewer]) {
        for (const res of [
          await t.http().get('/api/auth/oidc').set(bearer(user)),
          await t.http().put('/api/auth/oidc').set(bearer(user)).send(settings(org)),
          await t.http().delete('/api/auth/oidc').set(bearer(user)),
        ]) {
          expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
        }
      }
      const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'automation', role: 'admin' });
      const created = await t
        .http()
        .post(`/api/service-accounts/${account.body.id as string}/api-keys`)
        .set(bearer(org.admin))
        .send({ name: 'sso', scopes: ['organization:read', 'organization:write'] });
      expect(created.status).toBe(201);
      const withKey = { Authorization: `Bearer ${created.body.key as string}` };
      const before = await t.http().get('/api/auth/oidc').set(withKey);
      expect(before.status).toBe(200);
      const sessionOnly = { error: { code: 'FORBIDDEN', message: 'Only a signed-in user may do this; API keys cannot', status: 403 } };
      const put = await t
        .http()
        .put('/api/auth/oidc')
        .set(withKey)
        .send(settings(org, { defaultRole: 'admin' }));
      expect({ status: put.status, body: put.body }).toEqual({ status: 403, body: sessionOnly });
      const del = await t.http().delete('/api/auth/oidc').set(withKey);
      expect({ status: del.status, body: del.body }).toEqual({ status: 403, body: sessionOnly });
      expect((await t.http().get('/api/auth/oidc').set(bearer(org.admin))).body).toEqual(before.body);
    });

    it('keeps organizations apart: each reads its own settings; an organization without any has none, and no sign-in', async () => {
      const a = await oidcOrg();
      const b = await oidcOrg({ defaultRole: 'member' });
      const none = await t.newOrg('enterprise');
      expect((await t.http().get('/api/auth/oidc').set(bearer(a.admin))).body).toMatchObject({
        clientId: a.clientId,
        defaultRole: 'viewer',
      });
      expect((await t.http().get('/api/auth/oidc').set(bearer(b.admin))).body).toMatchObject({
        clientId: b.clientId,
        defaultRole: 'member',
      });
      const nothing = await t.http().get('/api/auth/oidc').set(bearer(none.admin));
      expect({ status: nothing.status, code: nothing.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
      for (const slug of [none.slug, `unknown-${randomUUID().slice(0, 8)}`, 'NOT..A..SLUG']) {
        const login = await t.http().get(`/api/auth/oidc/${slug}/login`);
        expect({ slug, status: login.status, code: login.body.error?.code }).toEqual({ slug, status: 404, code: 'NOT_FOUND' });
      }
      // B's answer at A's callback: A never sent that state.
      const back = await throughProvider(b, { email: newEmail() });
      await expectRefused(a, () => callback(back, a.slug));
    });
  });
});
