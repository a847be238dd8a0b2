import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import {
  authnRequestId,
  createTestIdp,
  encodeResponse,
  idpMetadataXml,
  SamlResponseOptions,
  samlResponseXml,
  tamperNameId,
  TestIdp,
  unsigned,
  verifySignatures,
  wrapSignature,
} from './support/saml-idp';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg } from './support/test-app';

/**
 * SAML 2.0 SSO as a service provider, against a real test IdP (its own key and certificate,
 * responses signed with xml-crypto). Each spec uses a fresh enterprise organization; each
 * negative spec checks the 401 SAML_INVALID envelope and that no user was created or changed.
 */

interface Sp {
  entityId: string;
  acsUrl: string;
  metadataUrl: string;
}

interface SamlOrg extends TestOrg {
  sp: Sp;
}

interface Login {
  requestId: string;
  location: string;
  relayState: string | null;
}

const APP = 'https://app.example.test/';
const AFTER_LOGIN = 'https://app.example.test/after';
const MINUTE = 60_000;

let emailCounter = 0;
/** A fresh email on the IdP's side. */
const newEmail = (who = 'user') => `${who}-${Date.now().toString(36)}-${++emailCounter}@corp.test`;

/** Refused the same way every time: 401 SAML_INVALID, and no tokens. */
function expectSamlInvalid(res: Response): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 401,
    body: { error: { code: 'SAML_INVALID', message: expect.any(String), status: 401 } },
  });
}

/** The captured response of the replay spec, replayed at a second app instance below. */
let replay: { org: SamlOrg; xml: string; email: string; usersBefore: unknown[] } | undefined;

describe('SAML SSO', () => {
  let t: TestApp;
  let idp: TestIdp;
  let rogue: TestIdp;

  beforeAll(async () => {
    // Every sign-in here comes from one address: room above the per-address limit of the SSO routes.
    t = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '1000' } });
    idp = createTestIdp('acme');
    rogue = createTestIdp('rogue');
  });
  afterAll(() => t.close());

  const settings = (overrides: Record<string, unknown> = {}) => ({
    idpEntityId: idp.entityId,
    idpSsoUrl: idp.ssoUrl,
    idpCertificates: [idp.certificate],
    attributes: { email: 'email', firstName: 'firstName', lastName: 'lastName', groups: 'groups' },
    roleMappings: [
      { group: 'admins', role: 'admin' },
      { group: 'staff', role: 'member' },
    ],
    defaultRole: 'viewer',
    wantResponseSigned: false,
    allowedRedirects: [APP],
    enabled: true,
    enforced: false,
    ...overrides,
  });

  const putSettings = (org: TestOrg, body: Record<string, unknown>) => t.http().put('/api/auth/saml').set(bearer(org.admin)).send(body);

  /** Configures SAML for the organization as its admin; answers the SP's own URLs. */
  async function configure(org: TestOrg, overrides: Record<string, unknown> = {}): Promise<Sp> {
    const res = await putSettings(org, settings(overrides));
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    return res.body.sp;
  }

  /** A fresh enterprise organization with SAML configured. */
  async function samlOrg(overrides: Record<string, unknown> = {}): Promise<SamlOrg> {
    const org = await t.newOrg('enterprise');
    return { ...org, sp: await configure(org, overrides) };
  }

  /** Starts an SP-initiated login; answers the AuthnRequest's id and the RelayState to echo. */
  async function startLogin(org: TestOrg, redirect = AFTER_LOGIN): Promise<Login> {
    const res = await t.http().get(`/api/auth/saml/${org.slug}/login`).query({ redirect });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 302 });
    const location: string = res.headers.location;
    return { requestId: authnRequestId(location), location, relayState: new URL(location).searchParams.get('RelayState') };
  }

  /** The IdP's signed answer to a login of this organization, as the options say. */
  const idpResponse = (org: SamlOrg, options: Partial<SamlResponseOptions>): SamlResponseOptions => ({
    idp,
    destination: org.sp.acsUrl,
    audience: org.sp.entityId,
    ...options,
  });

  /** An email user with names and groups, answering the given login. */
  const userResponse = (org: SamlOrg, login: Login, email: string, groups: string[] = [], extra: Partial<SamlResponseOptions> = {}) =>
    idpResponse(org, {
      inResponseTo: login.requestId,
      nameId: email,
      attributes: { email, firstName: 'Ada', lastName: 'Lovelace', groups },
      ...extra,
    });

  /** POSTs a SAMLResponse to the ACS, as the browser does (form post). */
  function acs(org: TestOrg, xml: string, options: { json?: boolean; relayState?: string | null } = {}) {
    const req = t.http().post(`/api/auth/saml/${org.slug}/acs`).type('form');
    if (options.json ?? true) req.set('Accept', 'application/json');
    else req.set('Accept', 'text/html,application/xhtml+xml');
    const form: Record<string, string> = { SAMLResponse: encodeResponse(xml) };
    if (options.relayState) form.RelayState = options.relayState;
    return req.send(form);
  }

  /** A complete SP-initiated sign-in; answers the token pair. */
  async function signIn(org: SamlOrg, email: string, groups: string[] = [], extra: Partial<SamlResponseOptions> = {}) {
    const login = await startLogin(org);
    const res = await acs(org, samlResponseXml(userResponse(org, login, email, groups, extra)));
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    return res.body as { accessToken: string; refreshToken: string; tokenType: string; expiresIn: number };
  }

  const db = () => t.app.get(DataSource);
  /** Every user row of the organization (all columns), to compare before and after. */
  const usersOf = (org: TestOrg) => db().query('SELECT * FROM users WHERE organization_id = $1 ORDER BY email', [org.id]);
  const userByEmail = async (email: string) => (await db().query('SELECT * FROM users WHERE email = $1', [email.toLowerCase()]))[0];
  const me = (tokens: { accessToken: string }) => t.http().get('/api/auth/me').set(bearer(tokens));

  /** Sends the XML to the ACS: refused with SAML_INVALID, and the organization's users are as they were. */
  async function expectRefused(org: SamlOrg, xml: string, neverProvisioned: string[]): Promise<void> {
    const before = await usersOf(org);
    expectSamlInvalid(await acs(org, xml));
    expect(await usersOf(org)).toEqual(before);
    for (const email of neverProvisioned) expect(await userByEmail(email)).toBeUndefined();
  }

  describe('the test IdP itself', () => {
    it('signs responses that verify with its certificate only, and its attacks break or dodge the signature', () => {
      const options = {
        idp,
        destination: 'https://sp.test/acs',
        audience: 'https://sp.test/entity',
        inResponseTo: '_x',
        nameId: 'a@corp.test',
      };
      const xml = samlResponseXml(options);
      expect(verifySignatures(xml, idp.certificate)).toEqual([true]);
      expect(verifySignatures(xml, rogue.certificate)).toEqual([false]);
      expect(verifySignatures(samlResponseXml({ ...options, signResponse: true }), idp.certificate)).toEqual([true, true]);
      expect(verifySignatures(samlResponseXml({ ...options, algorithm: 'sha1' }), idp.certificate)).toEqual([true]);
      expect(verifySignatures(samlResponseXml(unsigned(options)), idp.certificate)).toEqual([]);
      expect(verifySignatures(tamperNameId(xml, 'b@corp.test'), idp.certificate)).toEqual([false]);
      for (const placement of ['before', 'after', 'extensions'] as const) {
        const wrapped = wrapSignature(xml, 'evil@corp.test', placement);
        expect(verifySignatures(wrapped, idp.certificate)).toEqual([true]);
        expect(wrapped.match(/<saml:Assertion /g)).toHaveLength(2);
        expect(wrapped.match(/evil@corp\.test/g)).toHaveLength(1);
      }
    });
  });

  describe('settings', () => {
    it('lets an enterprise admin save, read and delete them; answers the SP URLs', async () => {
      const org = await t.newOrg('enterprise');
      const put = await putSettings(org, settings());
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({
        ...settings(),
        idpCertificates: [expect.stringContaining('BEGIN CERTIFICATE')],
        sp: { entityId: expect.any(String), acsUrl: expect.any(String), metadataUrl: expect.any(String) },
      });
      expect(put.body.sp.acsUrl).toContain(`/api/auth/saml/${org.slug}/acs`);
      expect(put.body.sp.metadataUrl).toContain(`/api/auth/saml/${org.slug}/metadata`);

      const get = await t.http().get('/api/auth/saml').set(bearer(org.admin));
      expect(get.status).toBe(200);
      expect(get.body).toEqual(put.body);

      expect((await t.http().delete('/api/auth/saml').set(bearer(org.admin))).status).toBe(204);
      expect((await t.http().get(`/api/auth/saml/${org.slug}/metadata`)).status).toBe(404);
    });

    it('takes the certificate from IdP metadata, and a second certificate during a rotation', async () => {
      const fromMetadata = await t.newOrg('enterprise');
      const { idpCertificates: _ignored, ...withoutCertificates } = settings();
      const put = await putSettings(fromMetadata, { ...withoutCertificates, idpMetadataXml: idpMetadataXml(idp) });
      expect({ status: put.status, body: put.body }).toMatchObject({ status: 200, body: { idpEntityId: idp.entityId } });
      const tokens = await signIn({ ...fromMetadata, sp: put.body.sp }, newEmail('meta'));
      expect((await me(tokens)).status).toBe(200);

      const rotating = await samlOrg({ idpCertificates: [rogue.certificate, idp.certificate] });
      expect((await me(await signIn(rotating, newEmail('rotating')))).status).toBe(200);
    });

    it('refuses a bad certificate and a plain-http SSO URL with VALIDATION_FAILED', async () => {
      const org = await t.newOrg('enterprise');
      for (const body of [
        settings({ idpCertificates: ['-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'] }),
        settings({ idpCertificates: ['not a certificate'] }),
        settings({ idpSsoUrl: 'http://acme.idp.test/sso' }),
      ]) {
        const res = await putSettings(org, body);
        expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
      }
      expect((await t.http().get(`/api/auth/saml/${org.slug}/metadata`)).status).toBe(404);
    });

    it('is for admins only: members and viewers get FORBIDDEN', async () => {
      const org = await t.newOrg('enterprise');
      for (const user of [org.member, org.viewer]) {
        const put = await t.http().put('/api/auth/saml').set(bearer(user)).send(settings());
        expect({ status: put.status, code: put.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
        const get = await t.http().get('/api/auth/saml').set(bearer(user));
        expect({ status: get.status, code: get.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
        const del = await t.http().delete('/api/auth/saml').set(bearer(user));
        expect({ status: del.status, code: del.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
      }
    });

    it('is for signed-in admins only: an API key, even with organization:write, gets 403 on PUT and DELETE and changes nothing', async () => {
      const org = await samlOrg();
      const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'automation', role: 'admin' });
      expect(account.status).toBe(201);
      const created = await t
        .http()
        .post(`/api/service-accounts/${account.body.id as string}/api-keys`)
        .set(bearer(org.admin))
        .send({ name: 'sso', scopes: ['organization:read', 'organization:write'] });
      expect(created.status).toBe(201);
      const withKey = { Authorization: `Bearer ${created.body.key as string}` };
      const before = await t.http().get('/api/auth/saml').set(bearer(org.admin));
      expect(before.status).toBe(200);
      const sessionOnly = { error: { code: 'FORBIDDEN', message: 'Only a signed-in user may do this; API keys cannot', status: 403 } };

      // Its own IdP, making everyone an admin: refused.
      const put = await t
        .http()
        .put('/api/auth/saml')
        .set(withKey)
        .send(
          settings({ idpEntityId: rogue.entityId, idpSsoUrl: rogue.ssoUrl, idpCertificates: [rogue.certificate], defaultRole: 'admin' }),
        );
      expect({ status: put.status, body: put.body }).toEqual({ status: 403, body: sessionOnly });
      const del = await t.http().delete('/api/auth/saml').set(withKey);
      expect({ status: del.status, body: del.body }).toEqual({ status: 403, body: sessionOnly });

      // Nothing changed: the key still reads the settings (organization:read), as they were; the rogue IdP signs no one in.
      const after = await t.http().get('/api/auth/saml').set(withKey);
      expect({ status: after.status, body: after.body }).toEqual({ status: 200, body: before.body });
      const email = newEmail('by-key');
      const login = await startLogin(org);
      await expectRefused(org, samlResponseXml(idpResponse(org, { idp: rogue, inResponseTo: login.requestId, nameId: email })), [email]);
      expect((await me(await signIn(org, newEmail('still')))).status).toBe(200);
    });

    it('is an enterprise feature: a team organization gets FEATURE_NOT_AVAILABLE', async () => {
      const org = await t.newOrg('team');
      const res = await putSettings(org, settings());
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: { code: 'FEATURE_NOT_AVAILABLE', message: expect.any(String), status: 403 } });
    });
  });

  describe('SP endpoints', () => {
    it('publishes SP metadata with the entity id, the ACS URL and WantAssertionsSigned', async () => {
      const org = await samlOrg();
      const res = await t
        .http()
        .get(`/api/auth/saml/${org.slug}/metadata`)
        .buffer(true)
        .parse((stream, done) => {
          let text = '';
          stream.setEncoding('utf8');
          stream.on('data', (chunk: string) => (text += chunk));
          stream.on('end', () => done(null, text));
        });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/(samlmetadata\+)?xml/);
      const xml = res.body as string;
      expect(xml).toContain(org.sp.entityId);
      expect(xml).toContain(org.sp.acsUrl);
      expect(xml).toContain('WantAssertionsSigned="true"');
    });

    it('redirects a login to the IdP with a deflated AuthnRequest and a RelayState', async () => {
      const org = await samlOrg();
      const login = await startLogin(org);
      expect(login.location.startsWith(`${idp.ssoUrl}?`)).toBe(true);
      expect(login.requestId).toMatch(/^[A-Za-z_][\w.-]*$/);
      expect(login.relayState).toBeTruthy();
      expect((await startLogin(org)).requestId).not.toBe(login.requestId);
    });

    it('answers 404 for an organization without SAML, with SAML disabled, or unknown', async () => {
      const none = await t.newOrg('enterprise');
      const disabled = await samlOrg({ enabled: false });
      for (const slug of [none.slug, disabled.slug, 'no-such-org']) {
        for (const path of ['metadata', `login?redirect=${encodeURIComponent(AFTER_LOGIN)}`]) {
          const res = await t.http().get(`/api/auth/saml/${slug}/${path}`);
          expect({ path, status: res.status, body: res.body }).toEqual({
            path,
            status: 404,
            body: { error: { code: expect.any(String), message: expect.any(String), status: 404 } },
          });
        }
      }
    });
  });

  describe('sign-in', () => {
    it('provisions the user on the first sign-in, with the role of the first mapping rule that matches, and no password', async () => {
      const org = await samlOrg();
      const email = newEmail('first');
      const tokens = await signIn(org, email, ['guests', 'staff']);
      expect(tokens).toEqual({
        accessToken: expect.any(String),
        refreshToken: expect.any(String),
        tokenType: 'Bearer',
        expiresIn: expect.any(Number),
      });

      const who = await me(tokens);
      expect(who.status).toBe(200);
      expect(who.body).toMatchObject({
        user: { email, role: 'member', firstName: 'Ada', lastName: 'Lovelace', organizationId: org.id },
        organization: { id: org.id, slug: org.slug },
      });
      // The user list of the admin shows the same user.
      const list = await t.http().get('/api/users').query({ limit: 100 }).set(bearer(org.admin));
      expect(list.body.data).toContainEqual(expect.objectContaining({ email, role: 'member' }));
      // The token pair is a normal one: it refreshes.
      const refreshed = await t.http().post('/api/auth/refresh').send({ refreshToken: tokens.refreshToken });
      expect(refreshed.status).toBe(200);
      // Made by SAML: no password signs this user in.
      const password = await t.http().post('/api/auth/login').send({ email, password: PASSWORD });
      expect({ status: password.status, code: password.body.error?.code }).toEqual({ status: 401, code: 'INVALID_CREDENTIALS' });
      // The audit log has the user's creation and its sign-in through SAML, by the user.
      const audit = await t.http().get(`/api/audit-events?targetId=${who.body.user.id}&limit=100`).set(bearer(org.admin));
      const actions = audit.body.data.map((e: { action: string; outcome: string }) => `${e.action}:${e.outcome}`);
      expect(actions).toEqual(expect.arrayContaining(['auth.signed_in:success', 'user.created:success']));
      const signedIn = audit.body.data.find(
        (e: { action: string; outcome: string }) => e.action === 'auth.signed_in' && e.outcome === 'success',
      );
      expect(signedIn.actor).toMatchObject({
        type: 'user',
        id: who.body.user.id,
        name: email,
        via: 'saml',
      });
    });

    it('maps the groups in order and falls back to the default role', async () => {
      const org = await samlOrg();
      for (const [groups, role] of [
        [['admins'], 'admin'],
        [['admins', 'staff'], 'admin'],
        // The order of the mappings decides, not the order of the user's groups.
        [['staff', 'admins'], 'admin'],
        [['staff'], 'member'],
        [['others'], 'viewer'],
        [[], 'viewer'],
      ] as const) {
        const email = newEmail('mapped');
        expect((await me(await signIn(org, email, [...groups]))).body.user).toMatchObject({ email, role });
      }
    });

    it('updates role and names on a later sign-in', async () => {
      const org = await samlOrg();
      const email = newEmail('again');
      const first = await me(await signIn(org, email, ['staff']));
      expect(first.body.user).toMatchObject({ email, role: 'member', firstName: 'Ada' });

      const login = await startLogin(org);
      const res = await acs(
        org,
        samlResponseXml(
          userResponse(org, login, email, [], { attributes: { email, firstName: 'Augusta', lastName: 'King', groups: ['admins'] } }),
        ),
      );
      expect(res.status).toBe(200);
      const second = await me(res.body);
      expect(second.body.user).toMatchObject({ id: first.body.user.id, email, role: 'admin', firstName: 'Augusta', lastName: 'King' });
      expect((await usersOf(org)).filter((u: { email: string }) => u.email === email)).toHaveLength(1);
    });

    it('takes the email from the NameID, lowercased', async () => {
      const org = await samlOrg();
      const email = newEmail('nameid');
      const login = await startLogin(org);
      const res = await acs(org, samlResponseXml(idpResponse(org, { inResponseTo: login.requestId, nameId: email.toUpperCase() })));
      expect(res.status).toBe(200);
      expect((await me(res.body)).body.user.email).toBe(email);
    });

    it('redirects the browser with a one-time code, exchanged once for a token pair', async () => {
      const org = await samlOrg();
      const email = newEmail('browser');
      const login = await startLogin(org);
      const res = await acs(org, samlResponseXml(userResponse(org, login, email, ['staff'])), {
        json: false,
        relayState: login.relayState,
      });
      expect(res.status).toBe(302);
      const target = new URL(res.headers.location);
      expect(`${target.origin}${target.pathname}`).toBe(AFTER_LOGIN);
      const code = target.searchParams.get('code');
      expect(code).toBeTruthy();
      expect(res.headers.location).not.toMatch(/accessToken|refreshToken/);

      const exchanged = await t.http().post('/api/auth/saml/exchange').send({ code });
      expect(exchanged.status).toBe(200);
      expect(exchanged.body).toEqual({
        accessToken: expect.any(String),
        refreshToken: expect.any(String),
        tokenType: 'Bearer',
        expiresIn: expect.any(Number),
      });
      expect((await me(exchanged.body)).body.user).toMatchObject({ email, role: 'member' });

      expectSamlInvalid(await t.http().post('/api/auth/saml/exchange').send({ code }));
      expectSamlInvalid(await t.http().post('/api/auth/saml/exchange').send({ code: 'not-a-code' }));
    });

    it('with wantResponseSigned, needs both the response and the assertion signed', async () => {
      const org = await samlOrg({ wantResponseSigned: true });
      const email = newEmail('both');
      const assertionOnly = userResponse(org, await startLogin(org), email, ['staff']);
      await expectRefused(org, samlResponseXml(assertionOnly), [email]);
      const responseOnly = userResponse(org, await startLogin(org), email, ['staff'], { signAssertion: false, signResponse: true });
      await expectRefused(org, samlResponseXml(responseOnly), [email]);
      expect((await me(await signIn(org, email, ['staff'], { signResponse: true }))).body.user).toMatchObject({ email, role: 'member' });
    });

    it('never redirects outside the allowed redirects', async () => {
      const org = await samlOrg();
      const refused = await t.http().get(`/api/auth/saml/${org.slug}/login`).query({ redirect: 'https://evil.test/after' });
      expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
      const lookalike = await t.http().get(`/api/auth/saml/${org.slug}/login`).query({ redirect: 'https://app.example.test.evil.test/' });
      expect(lookalike.status).toBe(400);

      // A RelayState changed on the way back is not followed.
      const login = await startLogin(org);
      const email = newEmail('relay');
      const res = await acs(org, samlResponseXml(userResponse(org, login, email)), { json: false, relayState: 'https://evil.test/after' });
      expect(res.status).not.toBe(302);
      expect(res.headers.location).toBeUndefined();
    });

    it('refuses a disabled user', async () => {
      const org = await samlOrg();
      const email = newEmail('disabled');
      const tokens = await signIn(org, email, ['staff']);
      const { id } = (await me(tokens)).body.user;
      const patch = await t.http().patch(`/api/users/${id}`).set(bearer(org.admin)).send({ disabled: true });
      expect(patch.status).toBe(200);

      const login = await startLogin(org);
      await expectRefused(org, samlResponseXml(userResponse(org, login, email, ['admins'])), []);
      expect(await userByEmail(email)).toMatchObject({ disabled: true, role: 'member' });
      const refused = await t.http().get(`/api/audit-events?targetId=${id}&action=auth.signed_in`).set(bearer(org.admin));
      expect(refused.body.data[0]).toMatchObject({ outcome: 'denied', actor: { type: 'anonymous', name: email, via: 'saml' } });
    });

    it("never signs in an operator account, even when the operator's own organization asserts it", async () => {
      const org = await samlOrg();
      const operator = await t.addUser(org.id, 'admin', { isOperator: true });
      const login = await startLogin(org);
      await expectRefused(org, samlResponseXml(userResponse(org, login, operator.email, ['admins'])), []);
      expect(await userByEmail(operator.email)).toMatchObject({ is_operator: true, role: 'admin', disabled: false });
    });
  });

  describe('refuses responses that are not valid', () => {
    let org: SamlOrg;
    beforeAll(async () => {
      org = await samlOrg();
    });

    /** A response to a fresh login of `org`, valid but for what `extra` changes. */
    async function answer(email: string, extra: Partial<SamlResponseOptions> = {}): Promise<SamlResponseOptions> {
      const login = await startLogin(org);
      return userResponse(org, login, email, ['admins'], extra);
    }

    it('unsigned', async () => {
      const email = newEmail('unsigned');
      await expectRefused(org, samlResponseXml(unsigned(await answer(email))), [email]);
    });

    it('NameID changed after signing', async () => {
      const email = newEmail('signed');
      const target = newEmail('tampered');
      const xml = samlResponseXml(await answer(email, { attributes: { groups: ['admins'] } }));
      await expectRefused(org, tamperNameId(xml, target), [email, target]);
    });

    it('signed by another key', async () => {
      const email = newEmail('rogue');
      await expectRefused(org, samlResponseXml(await answer(email, { signer: rogue })), [email]);
      // The rogue IdP's own certificate in KeyInfo must not be trusted either, even with the right issuer.
      const asRogue = samlResponseXml(await answer(email, { idp: rogue, issuer: idp.entityId }));
      await expectRefused(org, asRogue, [email]);
    });

    it('for another audience', async () => {
      const email = newEmail('audience');
      await expectRefused(org, samlResponseXml(await answer(email, { audience: 'https://other-sp.test/entity' })), [email]);
    });

    it('for another destination or recipient', async () => {
      const email = newEmail('destination');
      const elsewhere = 'https://other-sp.test/acs';
      await expectRefused(org, samlResponseXml(await answer(email, { destination: elsewhere })), [email]);
      // Only the Response's Destination is wrong; the assertion's Recipient is ours.
      await expectRefused(org, samlResponseXml(await answer(email, { destination: elsewhere, recipient: org.sp.acsUrl })), [email]);
      // Only the assertion's Recipient is wrong.
      await expectRefused(org, samlResponseXml(await answer(email, { recipient: elsewhere })), [email]);
    });

    it('from another issuer', async () => {
      const email = newEmail('issuer');
      await expectRefused(org, samlResponseXml(await answer(email, { issuer: 'https://other.idp.test/entity' })), [email]);
    });

    it('expired (NotOnOrAfter in the past)', async () => {
      const email = newEmail('expired');
      const now = Date.now();
      const xml = samlResponseXml(
        await answer(email, {
          issueInstant: new Date(now - 30 * MINUTE),
          notBefore: new Date(now - 31 * MINUTE),
          notOnOrAfter: new Date(now - 10 * MINUTE),
        }),
      );
      await expectRefused(org, xml, [email]);
      // Only the Conditions expired; the subject confirmation is still valid.
      const conditions = samlResponseXml(
        await answer(email, {
          notBefore: new Date(now - 31 * MINUTE),
          notOnOrAfter: new Date(now - 10 * MINUTE),
          subjectNotOnOrAfter: new Date(now + 5 * MINUTE),
        }),
      );
      await expectRefused(org, conditions, [email]);
      // Only the subject confirmation expired.
      await expectRefused(org, samlResponseXml(await answer(email, { subjectNotOnOrAfter: new Date(now - 10 * MINUTE) })), [email]);
    });

    it('not yet valid (NotBefore in the future)', async () => {
      const email = newEmail('early');
      const now = Date.now();
      const xml = samlResponseXml(
        await answer(email, { notBefore: new Date(now + 10 * MINUTE), notOnOrAfter: new Date(now + 20 * MINUTE) }),
      );
      await expectRefused(org, xml, [email]);
    });

    it('for an unknown AuthnRequest, or for none (unsolicited)', async () => {
      const email = newEmail('unknown');
      await expectRefused(org, samlResponseXml(await answer(email, { inResponseTo: '_0123456789abcdef0123456789abcdef' })), [email]);
      await expectRefused(org, samlResponseXml(await answer(email, { inResponseTo: undefined })), [email]);
    });

    it('for a login of another organization', async () => {
      const other = await samlOrg();
      const email = newEmail('cross');
      const theirs = await startLogin(other);
      await expectRefused(org, samlResponseXml(userResponse(org, theirs, email, ['admins'])), [email]);
    });

    it('signed with SHA-1', async () => {
      const email = newEmail('sha1');
      await expectRefused(org, samlResponseXml(await answer(email, { algorithm: 'sha1' })), [email]);
    });

    it.each([
      { placement: 'before', where: 'before the signed one' },
      { placement: 'after', where: 'after the signed one' },
      { placement: 'extensions', where: 'in place of the signed one, moved into Extensions' },
    ] as const)('with a wrapped signature: an unsigned assertion $where', async ({ placement }) => {
      const email = newEmail('wrapped');
      const evil = newEmail('evil');
      const xml = wrapSignature(samlResponseXml(await answer(email)), evil, placement);
      await expectRefused(org, xml, [evil, email]);
    });

    it('naming a user of another organization', async () => {
      const elsewhere = await t.newOrg('enterprise');
      const before = await userByEmail(elsewhere.member.email);
      await expectRefused(org, samlResponseXml(await answer(elsewhere.member.email)), []);
      expect(await userByEmail(elsewhere.member.email)).toEqual(before);
    });

    it('that is not SAML at all, without a 500', async () => {
      for (const body of ['', 'bm90IHhtbA==', encodeResponse('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>')]) {
        const res = await t
          .http()
          .post(`/api/auth/saml/${org.slug}/acs`)
          .type('form')
          .set('Accept', 'application/json')
          .send(body ? { SAMLResponse: body } : {});
        expect(res.status).not.toBe(500);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
      }
      expectSamlInvalid(await acs(org, '<not-xml'));
    });

    it('replayed: a response signs in once', async () => {
      const email = newEmail('replay');
      const xml = samlResponseXml(await answer(email, { attributes: { email, groups: ['staff'] } }));
      const first = await acs(org, xml);
      expect(first.status).toBe(200);
      expect((await me(first.body)).body.user).toMatchObject({ email, role: 'member' });
      const usersBefore = await usersOf(org);
      expectSamlInvalid(await acs(org, xml));
      expect(await usersOf(org)).toEqual(usersBefore);
      replay = { org, xml, email, usersBefore };
    });
  });

  it('XML comment in the NameID: never signs in as the truncated email', async () => {
    const org = await samlOrg();
    const victim = 'victim@corp.test';
    const created = await t.http().post('/api/users').set(bearer(org.admin)).send({ email: victim, password: PASSWORD, role: 'admin' });
    expect(created.status).toBe(201);
    const victimBefore = await userByEmail(victim);

    const login = await startLogin(org);
    // No email attribute: the email comes from the NameID alone.
    const xml = samlResponseXml(
      idpResponse(org, {
        inResponseTo: login.requestId,
        nameIdXml: 'victim@corp.test<!---->.attacker.test',
        attributes: { groups: ['staff'] },
      }),
    );
    const res = await acs(org, xml);
    if (res.status === 200) {
      const who = await me(res.body);
      expect(who.body.user).toMatchObject({ email: 'victim@corp.test.attacker.test', role: 'member' });
      expect(who.body.user.id).not.toBe(victimBefore.id);
    } else {
      expectSamlInvalid(res);
      expect(await userByEmail('victim@corp.test.attacker.test')).toBeUndefined();
    }
    expect(await userByEmail(victim)).toEqual(victimBefore);
  });

  it('enforced SSO refuses password sign-in for members, not for admins (break-glass)', async () => {
    const org = await samlOrg({ enforced: true });
    const login = (email: string) => t.http().post('/api/auth/login').send({ email, password: PASSWORD });
    for (const user of [org.member, org.viewer]) {
      const res = await login(user.email);
      expect([401, 403]).toContain(res.status);
      expect(res.body.accessToken).toBeUndefined();
      expect(['INVALID_CREDENTIALS', 'FORBIDDEN']).toContain(res.body.error?.code);
    }
    const admin = await login(org.admin.email);
    expect(admin.status).toBe(200);
    expect(admin.body.accessToken).toEqual(expect.any(String));
    // SAML itself still signs members in.
    expect((await me(await signIn(org, newEmail('enforced'), ['staff']))).body.user.role).toBe('member');
    // Not enforced: members sign in with their password again.
    await configure(org, { enforced: false });
    expect((await login(org.member.email)).status).toBe(200);
  });
});

/**
 * A replayed response at another instance of the service (a second app on the same database):
 * the used request id and assertion live in Postgres, not in one process. One app at a time
 * per file, so this runs after the first app is closed.
 */
describe('SAML replay at a second instance', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('refuses the response the first instance already accepted', async () => {
    expect(replay).toBeDefined();
    const { org, xml, usersBefore } = replay!;
    const res = await t
      .http()
      .post(`/api/auth/saml/${org.slug}/acs`)
      .type('form')
      .set('Accept', 'application/json')
      .send({ SAMLResponse: encodeResponse(xml) });
    expectSamlInvalid(res);
    const users = await t.app.get(DataSource).query('SELECT * FROM users WHERE organization_id = $1 ORDER BY email', [org.id]);
    expect(users).toEqual(usersBefore);
  });
});

describe('the public SAML routes are limited per client address', () => {
  it('answers 429 past LOGIN_LIMIT_PER_IP × 10 requests a window, before touching the database', async () => {
    const t = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '2' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await t.http().get('/api/auth/saml/no-such-org/login')).status);
      expect(statuses.every((s) => s === 404)).toBe(true);
      const over = await t.http().post('/api/auth/saml/exchange').send({ code: 'x' });
      expect(over.status).toBe(429);
      expect(over.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
      expect(over.headers['retry-after']).toBeDefined();
    } finally {
      await t.close();
    }
  });
});
