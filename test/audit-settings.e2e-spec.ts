import { install } from './support/agents';
import { createTestIdp } from './support/saml-idp';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';

const LLM_CONFIG = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-audit-secret-123', defaultModel: 'test-model' };

interface Event {
  action: string;
  outcome: string;
  actor: Record<string, unknown>;
  target: Record<string, unknown> | null;
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null;
}

/**
 * What the audit log records of signing in and out, and of an organization's settings: plugins,
 * SAML, the organization and its tier (by an operator), the license.
 */
describe('audit log: sign-in and settings', () => {
  let t: TestApp;
  let operator: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    const home = await t.newOrg('enterprise');
    operator = await t.addUser(home.id, 'admin', { isOperator: true });
  });

  afterAll(async () => {
    await t.close();
  });

  const events = async (org: TestOrg, query = ''): Promise<Event[]> => {
    const res = await t.http().get(`/api/audit-events?limit=100${query}`).set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const login = (email: string, password = PASSWORD) => t.http().post('/api/auth/login').send({ email, password });

  it('records sign-ins that succeed and fail, how they were made, and the sign-out', async () => {
    const org = await t.newOrg('enterprise');
    expect((await login(org.member.email, 'wrong password')).status).toBe(401);
    const signedIn = await login(org.member.email);
    expect(signedIn.status).toBe(200);
    const session = { accessToken: signedIn.body.accessToken };
    // A token from a refresh keeps how its session began.
    const refreshed = await t.http().post('/api/auth/refresh').send({ refreshToken: signedIn.body.refreshToken });
    expect(refreshed.status).toBe(200);
    const out = await t
      .http()
      .post('/api/auth/logout')
      .set(bearer({ accessToken: refreshed.body.accessToken }))
      .send({
        refreshToken: refreshed.body.refreshToken,
      });
    expect(out.status).toBe(204);
    // Unknown emails belong to no organization: nothing is written for them.
    expect((await login('nobody@nowhere.test')).status).toBe(401);

    const [signedOut, success, failure] = await events(org, `&targetId=${org.member.id}`);
    expect(failure).toMatchObject({
      action: 'auth.signed_in',
      outcome: 'failure',
      actor: { type: 'anonymous', id: null, name: org.member.email, via: 'password' },
      target: { type: 'user', id: org.member.id },
    });
    expect(success).toMatchObject({
      action: 'auth.signed_in',
      outcome: 'success',
      actor: { type: 'user', id: org.member.id, name: org.member.email, via: 'password', ip: expect.any(String) },
    });
    expect(signedOut).toMatchObject({ action: 'auth.signed_out', actor: { type: 'user', id: org.member.id, via: 'password' } });
    expect(session.accessToken).not.toBe(refreshed.body.accessToken);
  });

  it("records a plugin's install, configuration and removal, its secrets masked", async () => {
    const org = await t.newOrg('enterprise');
    await t.http().post('/api/plugins/llm/install').set(bearer(org.admin)).send({ config: LLM_CONFIG }).expect(201);
    await t
      .http()
      .patch('/api/plugins/llm')
      .set(bearer(org.admin))
      .send({ config: { defaultModel: 'bigger-model', apiKey: 'sk-audit-rotated-456' } })
      .expect(200);
    await t.http().delete('/api/plugins/llm').set(bearer(org.admin)).expect(204);

    const history = await events(org, '&targetId=llm');
    expect(history.map((e) => e.action)).toEqual(['plugin.uninstalled', 'plugin.configured', 'plugin.installed']);
    const [, configured, installed] = history;
    expect(installed.changes!.after).toMatchObject({ config: { ...LLM_CONFIG, apiKey: '[redacted]' } });
    expect(configured.changes).toEqual({
      before: { config: { ...LLM_CONFIG, apiKey: '[redacted]' } },
      after: { config: { ...LLM_CONFIG, defaultModel: 'bigger-model', apiKey: '[redacted]' } },
    });
    const text = JSON.stringify(history);
    expect(text).not.toContain('sk-audit-secret-123');
    expect(text).not.toContain('sk-audit-rotated-456');
  });

  it('records SAML settings set, changed and removed', async () => {
    const org = await t.newOrg('enterprise');
    const idp = createTestIdp('audit');
    const settings = {
      idpEntityId: idp.entityId,
      idpSsoUrl: idp.ssoUrl,
      idpCertificates: [idp.certificate],
      defaultRole: 'viewer',
      allowedRedirects: ['https://app.example.test/'],
    };
    await t.http().put('/api/auth/saml').set(bearer(org.admin)).send(settings).expect(200);
    await t
      .http()
      .put('/api/auth/saml')
      .set(bearer(org.admin))
      .send({ ...settings, defaultRole: 'member' })
      .expect(200);
    await t.http().delete('/api/auth/saml').set(bearer(org.admin)).expect(204);

    const [removed, changed, set] = await events(org, '&targetId=' + org.id);
    expect(set).toMatchObject({
      action: 'saml.settings_updated',
      changes: { after: { idpEntityId: idp.entityId, defaultRole: 'viewer' } },
    });
    expect(changed).toMatchObject({
      action: 'saml.settings_updated',
      changes: { before: { defaultRole: 'viewer' }, after: { defaultRole: 'member' } },
    });
    expect(Object.keys(changed.changes!.after!)).toEqual(['defaultRole']);
    expect(removed).toMatchObject({ action: 'saml.settings_deleted', changes: { before: { idpEntityId: idp.entityId } } });
  });

  it("records an operator's change of an organization and of its tier in that organization's log", async () => {
    const org = await t.newOrg('team');
    const res = await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ name: 'Renamed', tier: 'enterprise' });
    expect(res.status).toBe(200);
    const history = await events(org, `&targetId=${org.id}`);
    expect(history.map((e) => e.action).sort()).toEqual(['organization.updated', 'subscription.updated']);
    expect(history.find((e) => e.action === 'subscription.updated')).toMatchObject({
      actor: { type: 'user', id: operator.id },
      changes: { before: { tier: 'team' }, after: { tier: 'enterprise' } },
    });
    expect(history.find((e) => e.action === 'organization.updated')!.changes).toEqual({
      before: { name: org.slug },
      after: { name: 'Renamed' },
    });
  });

  it("records a license installed in the operator's organization", async () => {
    const res = await t.http().put('/api/license').set(bearer(operator)).send({ key: process.env.LICENSE_KEY });
    expect(res.status).toBe(200);
    const home = await t.http().get('/api/audit-events?action=license.installed').set(bearer(operator));
    expect(home.body.data[0]).toMatchObject({
      action: 'license.installed',
      actor: { type: 'user', id: operator.id },
      target: { type: 'license', name: 'test suite' },
      changes: { after: { customer: 'test suite', tier: 'enterprise' } },
    });
    expect(JSON.stringify(home.body.data[0])).not.toContain(process.env.LICENSE_KEY!);
  });

  it('keeps install through the helper (transform) in the log too', async () => {
    const org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    expect((await events(org, '&action=plugin.installed')).map((e) => e.target)).toEqual([
      { type: 'plugin', id: 'transform', name: 'transform' },
    ]);
  });
});
