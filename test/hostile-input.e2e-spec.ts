import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Controller, Get, Param } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Public } from '../src/shared/auth/access.decorators';
import { install } from './support/agents';
import { entryPoint } from './support/service-process';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';

/** Reaches Postgres with what it refuses as text or JSON, as a path the edge checks miss would. */
@Controller('test/unstorable')
class UnstorableController {
  constructor(private readonly db: DataSource) {}

  @Get(':kind')
  @Public()
  async store(@Param('kind') kind: string): Promise<unknown> {
    const statements: Record<string, [string, unknown[]]> = {
      // 22P05: JSON text holding a lone surrogate's escape (what JSON.stringify writes for one).
      surrogate: ['SELECT $1::jsonb AS value', [JSON.stringify({ a: '\ud800' })]],
      // 22P05 too: the escape of NUL in JSON.
      nul: ['SELECT $1::jsonb AS value', [JSON.stringify({ a: '\u0000' })]],
      // 22P02: text that is not a value of the type.
      number: ['SELECT $1::int AS value', ['twelve']],
    };
    const [sql, parameters] = statements[kind];
    return this.db.query(sql, parameters);
  }
}

/**
 * Input crafted to reach the database as a 500: NUL characters (Postgres refuses them in text
 * and JSONB), forged cursors, a missing nested object; and a LICENSE_KEY that does not verify.
 * Each answers 400 in the envelope, and nothing changes.
 */
describe('hostile input', () => {
  let t: TestApp;
  let org: TestOrg;
  let operator: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ controllers: [UnstorableController] });
    org = await t.newOrg('enterprise');
    operator = await t.addUser(org.id, 'admin', { isOperator: true });
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  const organizationCount = async () => Number((await t.app.get(DataSource).query('SELECT count(*) FROM organizations'))[0].count);
  const expectValidationFailed = (res: { status: number; body: { error?: unknown } }, path: string) => {
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      status: 400,
      details: [expect.objectContaining({ path }) as unknown],
    });
  };

  it('refuses a NUL character in a string at the body parser, naming the field; nothing is created', async () => {
    const before = await organizationCount();
    const res = await t
      .http()
      .post('/api/organizations')
      .set(bearer(operator))
      .send({
        slug: `nul-${Date.now()}`,
        name: 'a\u0000b',
        tier: 'starter',
        admin: { email: `nul-${Date.now()}@test.example`, password: PASSWORD },
      });
    expectValidationFailed(res, 'name');
    expect(await organizationCount()).toBe(before);
  });

  it('refuses a NUL character in a PATCH, and the organization keeps its name', async () => {
    const res = await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ name: 'x\u0000' });
    expectValidationFailed(res, 'name');
    const after = await t.http().get(`/api/organizations/${org.id}`).set(bearer(operator));
    expect(after.body.name).toBe(org.slug);
  });

  it('refuses a NUL character in a key, deep in a JSON value', async () => {
    const res = await t
      .http()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({ name: 'x', kind: 'transform.jsonata', config: { expression: '$' }, inputSchema: { properties: { 'a\u0000': {} } } });
    expectValidationFailed(res, 'inputSchema.properties');
  });

  /** POSTs `text` as it is: a JSON text with `\ud800` written as the escape, or raw bytes. */
  const postRaw = (url: string, text: string | Buffer, as: TestUser = org.admin) =>
    t
      .http()
      .post(url)
      .set(bearer(as))
      .set('Content-Type', 'application/json')
      // As it is: superagent would write a Buffer as JSON of its bytes.
      .serialize(() => text as string)
      .send(text);
  const define = async (body: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(body);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const echoWorkflow = () => define({ name: 'echo', steps: [{ id: 'echo', action: 'transform.jsonata', with: { expression: '$' } }] });
  const echoAgent = async (): Promise<string> => {
    const res = await t
      .http()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({ name: 'echo', kind: 'transform.jsonata', config: { expression: '$' } });
    if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const count = async (sql: string, parameters: unknown[]) =>
    Number((await t.app.get(DataSource).query<Array<{ count: string }>>(sql, parameters))[0].count);

  describe('a lone surrogate (\\ud800 in the JSON text): 400 naming the field, never the 500 of Postgres', () => {
    it.each([
      ['a high surrogate in a value', '{"input":{"text":"a\\ud800b"}}', 'input.text'],
      ['a low surrogate in a value', '{"input":{"list":["ok","\\udfff"]}}', 'input.list.1'],
      ['a surrogate in a key', '{"input":{"\\udc00key":1}}', 'input'],
      ['a high surrogate followed by no low one', '{"input":"\\ud83d\\u0041"}', 'input'],
    ])('agent execute: %s', async (_what, text, path) => {
      const agentId = await echoAgent();
      expectValidationFailed(await postRaw(`/api/agents/${agentId}/execute?wait=0`, text), path);
      expect(await count('SELECT count(*) FROM agent_executions WHERE agent_id = $1', [agentId])).toBe(0);
    });

    it('accepts a well-formed pair (an emoji written as two escapes) and keeps it', async () => {
      const agentId = await echoAgent();
      const res = await postRaw(`/api/agents/${agentId}/execute?wait=20`, '{"input":{"text":"\\ud83d\\ude00"}}');
      expect({ status: res.status, output: res.body.output as unknown }).toEqual({ status: 200, output: { text: '\u{1f600}' } });
    });

    it('workflow run', async () => {
      const workflowId = await echoWorkflow();
      expectValidationFailed(await postRaw(`/api/workflows/${workflowId}/run?wait=0`, '{"input":{"a":"\\ud800"}}'), 'input.a');
      expect(await count('SELECT count(*) FROM workflow_runs WHERE workflow_id = $1', [workflowId])).toBe(0);
    });

    it('schedule create with an input', async () => {
      const workflowId = await echoWorkflow();
      const res = await postRaw(`/api/workflows/${workflowId}/schedules`, '{"cron":"0 9 * * *","timezone":"UTC","input":{"a":"x\\udbff"}}');
      expectValidationFailed(res, 'input.a');
      expect(await count('SELECT count(*) FROM workflow_schedules WHERE workflow_id = $1', [workflowId])).toBe(0);
    });
  });

  it('takes invalid UTF-8 bytes in a JSON body as U+FFFD, as the JSON parser decodes them: stored, never a 500', async () => {
    const agentId = await echoAgent();
    // ED A0 80 is how CESU-8 writes U+D800; in UTF-8 it is three invalid bytes.
    const raw = Buffer.concat([Buffer.from('{"input":{"text":"a'), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from('b"}}')]);
    const res = await postRaw(`/api/agents/${agentId}/execute?wait=20`, raw);
    expect({ status: res.status, output: res.body.output as unknown }).toEqual({
      status: 200,
      output: { text: 'a\ufffd\ufffd\ufffd\ufffdb' },
    });
  });

  describe('the hook of an inbound webhook trigger', () => {
    const trigger = async (): Promise<{ id: string; workflowId: string; secret: string }> => {
      const workflowId = await echoWorkflow();
      const res = await t.http().post(`/api/workflows/${workflowId}/triggers`).set(bearer(org.admin)).send({ scheme: 'bearer' });
      if (res.status !== 201) throw new Error(`trigger: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.id as string, workflowId, secret: res.body.secret as string };
    };
    const nothingRecorded = async (hook: { id: string; workflowId: string }) => {
      expect(await count('SELECT count(*) FROM workflow_trigger_events WHERE trigger_id = $1', [hook.id])).toBe(0);
      expect(await count('SELECT count(*) FROM workflow_runs WHERE workflow_id = $1', [hook.workflowId])).toBe(0);
    };

    it('refuses a lone surrogate in the body: 400 naming the field, nothing recorded', async () => {
      const hook = await trigger();
      const res = await t
        .http()
        .post(`/api/hooks/${hook.id}`)
        .set({ Authorization: `Bearer ${hook.secret}`, 'Content-Type': 'application/json' })
        .send('{"a":"\\ud800"}');
      expectValidationFailed(res, 'a');
      await nothingRecorded(hook);
    });

    it.each([
      ['a NUL in a value', '?a=%00', 'a'],
      ['a NUL in a key', '?a%00b=1', '(a key)'],
      ['a NUL in a repeated value', '?a=1&a=x%00', 'a.1'],
    ])('refuses %s of the query: 400 naming it, nothing recorded', async (_what, query, path) => {
      const hook = await trigger();
      const res = await t
        .http()
        .post(`/api/hooks/${hook.id}${query}`)
        .set({ Authorization: `Bearer ${hook.secret}`, 'Content-Type': 'application/json' })
        .send('{"a":1}');
      expectValidationFailed(res, path);
      await nothingRecorded(hook);
    });
  });

  it.each([
    ['a NUL in a query value', '/api/agents?limit=1&cursor=%00', 'cursor'],
    ['a NUL in a query key', '/api/agents?x%00=1', '(a key)'],
  ])('refuses %s on any route: 400 naming it', async (_what, url, path) => {
    expectValidationFailed(await t.http().get(url).set(bearer(org.admin)), path);
  });

  it.each([
    ['a lone surrogate in JSON', 'surrogate'],
    ['a NUL in JSON', 'nul'],
    ['text that is not a number', 'number'],
  ])('answers what Postgres refuses as %s with 400 VALIDATION_FAILED, its SQL not shown', async (_what, kind) => {
    const res = await t.http().get(`/test/unstorable/${kind}`);
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED', status: 400, message: expect.any(String) } },
    });
    expect(res.body.error.message).not.toMatch(/jsonb|integer|syntax|SELECT|twelve|\\u/i);
  });

  it.each([
    ['an id of 36 dashes', ['2026-01-01T00:00:00.000Z', '-'.repeat(36)]],
    ['a time that is a number', [0, '00000000-0000-0000-0000-000000000000']],
    ['a year before 1970', ['0001-01-01T00:00:00.000Z', '00000000-0000-0000-0000-000000000000']],
    ['a year past 9999', ['+275760-09-13T00:00:00.000Z', '00000000-0000-0000-0000-000000000000']],
    ['not an array', { a: 1 }],
  ])('refuses a forged cursor with %s: 400, not 500', async (_what, forged) => {
    const cursor = Buffer.from(JSON.stringify(forged)).toString('base64url');
    const res = await t.http().get('/api/users').query({ cursor }).set(bearer(org.admin));
    expectValidationFailed(res, 'cursor');
  });

  it('answers a missing admin of a new organization with "admin is required"', async () => {
    const before = await organizationCount();
    const res = await t
      .http()
      .post('/api/organizations')
      .set(bearer(operator))
      .send({ slug: `no-admin-${Date.now()}`, name: 'No admin', tier: 'starter' });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toContainEqual({ path: 'admin', message: 'admin is required' });
    expect(await organizationCount()).toBe(before);
  });

  it('a LICENSE_KEY that does not verify stops the boot with one line naming it, and exit code 1', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const [node, ...main] = entryPoint('main');
      const child = execFile(
        node,
        main,
        {
          cwd: join(__dirname, '..'),
          env: {
            ...process.env,
            NODE_OPTIONS: '',
            LOG_LEVEL: 'silent',
            LICENSE_KEY: 'not.a.license',
            DATABASE_URL: process.env.DATABASE_URL,
            PORT: '0',
          },
          timeout: 90_000,
        },
        (error, _stdout, stderr) => resolve({ code: child.exitCode ?? (error as { code?: number } | null)?.code ?? null, stderr }),
      );
    });
    expect(result.code).toBe(1);
    const lines = result.stderr
      .split('\n')
      .filter((line) => line.trim() && !line.includes('ExperimentalWarning') && !line.includes('--trace-warnings'));
    expect(lines).toEqual([expect.stringMatching(/^LICENSE_KEY is not a license this installation accepts: /) as unknown]);
  }, 120_000);
});
