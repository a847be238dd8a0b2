import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';

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
    t = await createTestApp();
    org = await t.newOrg('enterprise');
    operator = await t.addUser(org.id, 'admin', { isOperator: true });
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
      const child = execFile(
        process.execPath,
        ['-r', 'ts-node/register', join(__dirname, '../src/main.ts')],
        {
          cwd: join(__dirname, '..'),
          env: {
            ...process.env,
            NODE_OPTIONS: '',
            TS_NODE_TRANSPILE_ONLY: '1',
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
