import { DataSource } from 'typeorm';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { PluginsService } from '../src/modules/plugins/application/plugins.service';

const LLM_CONFIG = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-very-secret-key-123', defaultModel: 'test-model' };

describe('plugins', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    [org, other] = [await t.newOrg(), await t.newOrg()];
  });
  afterAll(() => t.close());

  const notInstalled = (slug: string) => ({
    error: { code: 'PLUGIN_NOT_FOUND', message: `Plugin '${slug}' is not installed`, status: 404 },
  });

  it('lists the catalog with each manifest and whether it is installed', async () => {
    const res = await t.http().get('/api/plugin-catalog').set(bearer(org.viewer));
    expect(res.status).toBe(200);
    const slugs = res.body.data.map((p: { slug: string }) => p.slug).sort();
    expect(slugs).toEqual(['http', 'llm', 'mcp', 'transform']);
    const llm = res.body.data.find((p: { slug: string }) => p.slug === 'llm');
    expect(llm).toMatchObject({
      installed: false,
      secretFields: ['apiKey'],
      agentKinds: [expect.objectContaining({ kind: 'llm.chat' }), expect.objectContaining({ kind: 'llm.agent' })],
    });
    expect(res.body.data.find((p: { slug: string }) => p.slug === 'transform').actions[0].kind).toBe('transform.jsonata');
  });

  it('installs, is idempotent with the same config and conflicts with another', async () => {
    const first = await t.http().post('/api/plugins/transform/install').set(bearer(org.admin)).send({});
    expect(first.status).toBe(201);
    expect(first.headers.location).toBe('/api/plugins/transform');
    expect(first.body).toMatchObject({
      slug: 'transform',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      installedBy: org.admin.id,
      config: {},
    });
    const again = await t.http().post('/api/plugins/transform/install').set(bearer(org.admin)).send({ config: {} });
    expect(again.status).toBe(200);
    expect(again.body.installationId).toBe(first.body.installationId);

    await t.http().post('/api/plugins/llm/install').set(bearer(org.admin)).send({ config: LLM_CONFIG }).expect(201);
    const same = await t
      .http()
      .post('/api/plugins/llm/install')
      .set(bearer(org.admin))
      .send({ config: { defaultModel: 'test-model', apiKey: LLM_CONFIG.apiKey, baseUrl: LLM_CONFIG.baseUrl } });
    expect(same.status).toBe(200);
    const different = await t
      .http()
      .post('/api/plugins/llm/install')
      .set(bearer(org.admin))
      .send({ config: { ...LLM_CONFIG, defaultModel: 'other' } });
    expect(different.status).toBe(409);
    expect(different.body.error.code).toBe('PLUGIN_ALREADY_INSTALLED');
  });

  it('refuses a slug the catalog lacks and a config that fails the schema', async () => {
    const unknown = await t.http().post('/api/plugins/slack/install').set(bearer(org.admin)).send({});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      error: { code: 'PLUGIN_NOT_IN_CATALOG', message: "Plugin 'slack' is not in the catalog", status: 404 },
    });
    const bad = await t
      .http()
      .post('/api/plugins/llm/install')
      .set(bearer(other.admin))
      .send({ config: { baseUrl: 'not a url', temperature: 3 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.error.details.length).toBeGreaterThan(0);
    expect((await t.http().get('/api/plugins/llm').set(bearer(other.admin))).status).toBe(404);
  });

  it('never returns a secret nor stores it in clear', async () => {
    const res = await t.http().get('/api/plugins/llm').set(bearer(org.viewer));
    expect(res.status).toBe(200);
    expect(res.body.config).toEqual({ ...LLM_CONFIG, apiKey: '********' });
    expect(res.body.agentKinds.map((k: { kind: string }) => k.kind)).toEqual(['llm.chat', 'llm.agent']);
    for (const path of ['/api/plugins', '/api/plugin-catalog', '/api/plugins/llm']) {
      expect(JSON.stringify((await t.http().get(path).set(bearer(org.admin))).body)).not.toContain(LLM_CONFIG.apiKey);
    }
    const rows = await t.app
      .get(DataSource)
      .query('SELECT config::text, sealed_secrets FROM plugin_installations WHERE organization_id = $1', [org.id]);
    expect(JSON.stringify(rows)).not.toContain(LLM_CONFIG.apiKey);
    expect(rows.some((r: { sealed_secrets: string | null }) => r.sealed_secrets?.startsWith('v1.'))).toBe(true);
  });

  it('changes the config with PATCH, keeping a secret sent back redacted', async () => {
    const res = await t
      .http()
      .patch('/api/plugins/llm')
      .set(bearer(org.admin))
      .send({ config: { defaultModel: 'bigger-model', apiKey: '********' } });
    expect(res.status).toBe(200);
    expect(res.body.config).toEqual({ ...LLM_CONFIG, defaultModel: 'bigger-model', apiKey: '********' });
    const same = await t
      .http()
      .post('/api/plugins/llm/install')
      .set(bearer(org.admin))
      .send({ config: { ...LLM_CONFIG, defaultModel: 'bigger-model' } });
    expect(same.status).toBe(200);
    const bad = await t
      .http()
      .patch('/api/plugins/llm')
      .set(bearer(org.admin))
      .send({ config: { baseUrl: null } });
    expect(bad.status).toBe(400);
  });

  describe('a stored secret stays with its origin', () => {
    let own: TestOrg;
    beforeEach(async () => {
      own = await t.newOrg();
      await t.http().post('/api/plugins/llm/install').set(bearer(own.admin)).send({ config: LLM_CONFIG }).expect(201);
    });
    const stored = async () => (await t.app.get(PluginsService).get(own.id, 'llm')).installation.config as Record<string, unknown>;

    it('refuses a new baseUrl without the key entered again, naming the field; nothing changes', async () => {
      for (const config of [{ baseUrl: 'https://attacker.example/v1' }, { baseUrl: 'https://attacker.example/v1', apiKey: '********' }]) {
        const res = await t.http().patch('/api/plugins/llm').set(bearer(own.admin)).send({ config });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'config.apiKey' }] });
      }
      expect(await stored()).toEqual(LLM_CONFIG);
    });

    it('takes a new baseUrl with a new key, or with the key removed', async () => {
      const moved = await t
        .http()
        .patch('/api/plugins/llm')
        .set(bearer(own.admin))
        .send({ config: { baseUrl: 'https://models.example/v1', apiKey: 'sk-the-new-key' } });
      expect(moved.status).toBe(200);
      expect(await stored()).toEqual({ ...LLM_CONFIG, baseUrl: 'https://models.example/v1', apiKey: 'sk-the-new-key' });
      const dropped = await t
        .http()
        .patch('/api/plugins/llm')
        .set(bearer(own.admin))
        .send({ config: { baseUrl: 'https://other.example/v1', apiKey: null } });
      expect(dropped.status).toBe(200);
      expect(await stored()).toEqual({ baseUrl: 'https://other.example/v1', defaultModel: LLM_CONFIG.defaultModel });
    });

    it('http: installation headers name the origins they go to, and moving the origins needs the authorization again', async () => {
      const install = (config: Record<string, unknown>) =>
        t.http().post('/api/plugins/http/install').set(bearer(own.admin)).send({ config });
      const without = await install({ authorization: 'Bearer install-token' });
      expect(without.status).toBe(400);
      expect(without.body.error.code).toBe('VALIDATION_FAILED');
      expect((await install({ authorization: 'Bearer install-token', origins: ['https://api.example.com'] })).status).toBe(201);
      const moved = await t
        .http()
        .patch('/api/plugins/http')
        .set(bearer(own.admin))
        .send({ config: { origins: ['https://attacker.example'] } });
      expect(moved.status).toBe(400);
      expect(moved.body.error.details).toEqual([expect.objectContaining({ path: 'config.authorization' })]);
    });

    it('answers a re-install alike whatever key it guesses: no oracle', async () => {
      const right = await t.http().post('/api/plugins/llm/install').set(bearer(own.admin)).send({ config: LLM_CONFIG });
      const wrong = await t
        .http()
        .post('/api/plugins/llm/install')
        .set(bearer(own.admin))
        .send({ config: { ...LLM_CONFIG, apiKey: 'sk-a-guess' } });
      expect([right.status, wrong.status]).toEqual([200, 200]);
      expect(wrong.body).toEqual(right.body);
      expect(await stored()).toEqual(LLM_CONFIG);
    });
  });

  it('answers every route naming a plugin that is not installed with the exact envelope', async () => {
    const calls = [
      t.http().get('/api/plugins/http').set(bearer(org.admin)),
      t.http().patch('/api/plugins/http').set(bearer(org.admin)).send({ config: {} }),
      t.http().delete('/api/plugins/http').set(bearer(org.admin)),
      t.http().get('/api/plugins/slack').set(bearer(org.admin)),
    ];
    const [get, patch, del, unknown] = await Promise.all(calls);
    for (const res of [get, patch, del]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual(notInstalled('http'));
    }
    expect(unknown.body).toEqual(notInstalled('slack'));
  });

  it('keeps installations per organization', async () => {
    expect((await t.http().get('/api/plugins/transform').set(bearer(other.admin))).body).toEqual(notInstalled('transform'));
    expect((await t.http().get('/api/plugins').set(bearer(other.viewer))).body).toEqual({ data: [], nextCursor: null });
    expect((await t.http().delete('/api/plugins/transform').set(bearer(other.admin))).status).toBe(404);
    expect(
      (
        await t
          .http()
          .patch('/api/plugins/llm')
          .set(bearer(other.admin))
          .send({ config: { defaultModel: 'x' } })
      ).status,
    ).toBe(404);
    const mine = await t.http().get('/api/plugins').set(bearer(org.viewer));
    expect(mine.body.data.map((p: { slug: string }) => p.slug).sort()).toEqual(['llm', 'transform']);
    const catalog = await t.http().get('/api/plugin-catalog').set(bearer(other.viewer));
    expect(catalog.body.data.every((p: { installed: boolean }) => !p.installed)).toBe(true);
  });

  it.each(['member', 'viewer'] as const)('forbids a %s to install, change or uninstall', async (role) => {
    for (const res of [
      await t.http().post('/api/plugins/http/install').set(bearer(org[role])).send({}),
      await t
        .http()
        .patch('/api/plugins/llm')
        .set(bearer(org[role]))
        .send({ config: { defaultModel: 'x' } }),
      await t.http().delete('/api/plugins/transform').set(bearer(org[role])),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect((await t.http().get('/api/plugins/llm').set(bearer(org.admin))).body.config.defaultModel).toBe('bigger-model');
  });

  it('uninstalls', async () => {
    expect((await t.http().delete('/api/plugins/transform').set(bearer(org.admin))).status).toBe(204);
    expect((await t.http().get('/api/plugins/transform').set(bearer(org.admin))).body).toEqual(notInstalled('transform'));
    expect((await t.http().post('/api/plugins/transform/install').set(bearer(org.admin)).send({})).status).toBe(201);
  });

  it('refuses a malformed slug with 400', async () => {
    const res = await t.http().get('/api/plugins/Not_A_Slug').set(bearer(org.admin));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
  });
});
