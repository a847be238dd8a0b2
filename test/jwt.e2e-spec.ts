import { createHmac } from 'node:crypto';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg } from './support/test-app';

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

function sign(header: object, payload: object, secret: string): string {
  const body = `${b64(header)}.${b64(payload)}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

describe('access tokens', () => {
  let t: TestApp;
  let org: TestOrg;
  const secret = process.env.JWT_SECRET!;
  const now = () => Math.floor(Date.now() / 1000);
  let claims: Record<string, unknown>;

  beforeAll(async () => {
    t = await createTestApp();
    org = await t.newOrg();
    claims = { sub: org.admin.id, org: org.id, role: 'admin', ver: 0, iss: 'platform', aud: 'platform-api', jti: 'j1' };
  });
  afterAll(() => t.close());

  const me = (token: string) => t.http().get('/api/auth/me').set('Authorization', `Bearer ${token}`);
  const expectUnauthorized = (res: { status: number; body: unknown }, code = 'UNAUTHORIZED') => {
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: { code, message: expect.any(String), status: 401 } });
  };

  it('accepts a well-formed token signed with the secret', async () => {
    expect((await me(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now(), exp: now() + 60 }, secret))).status).toBe(200);
  });

  it('refuses a request without a token', async () => {
    expectUnauthorized(await t.http().get('/api/users'));
  });

  it('refuses a non-bearer authorization header', async () => {
    expectUnauthorized(await t.http().get('/api/users').set('Authorization', `Basic ${org.admin.token}`));
  });

  it('refuses alg none', async () => {
    const token = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, iat: now(), exp: now() + 60 })}.`;
    expectUnauthorized(await me(token));
  });

  it('refuses a token signed with another secret', async () => {
    expectUnauthorized(await me(sign({ alg: 'HS256' }, { ...claims, iat: now(), exp: now() + 60 }, 'x'.repeat(40))));
  });

  it('refuses tampered claims', async () => {
    const [header, , signature] = org.viewer.token.split('.');
    const payload = JSON.parse(Buffer.from(org.viewer.token.split('.')[1], 'base64url').toString());
    const tampered = `${header}.${b64({ ...payload, role: 'admin', sub: org.admin.id })}.${signature}`;
    expectUnauthorized(await me(tampered));
  });

  it('answers an expired token with TOKEN_EXPIRED', async () => {
    expectUnauthorized(await me(sign({ alg: 'HS256' }, { ...claims, iat: now() - 120, exp: now() - 60 }, secret)), 'TOKEN_EXPIRED');
  });

  it('refuses a wrong issuer', async () => {
    expectUnauthorized(await me(sign({ alg: 'HS256' }, { ...claims, iss: 'evil', iat: now(), exp: now() + 60 }, secret)));
  });

  it('refuses a wrong audience', async () => {
    expectUnauthorized(await me(sign({ alg: 'HS256' }, { ...claims, aud: 'other-api', iat: now(), exp: now() + 60 }, secret)));
  });

  it('refuses a token without exp', async () => {
    expectUnauthorized(await me(sign({ alg: 'HS256' }, { ...claims, iat: now() }, secret)));
  });

  it('refuses an HS512 token even with the right secret', async () => {
    const body = `${b64({ alg: 'HS512' })}.${b64({ ...claims, iat: now(), exp: now() + 60 })}`;
    expectUnauthorized(await me(`${body}.${createHmac('sha512', secret).update(body).digest('base64url')}`));
  });

  it("stops a disabled user's token at once", async () => {
    const user = await t.addUser(org.id, 'member');
    expect((await me(user.token)).status).toBe(200);
    await t.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send({ disabled: true }).expect(200);
    expectUnauthorized(await me(user.token));
  });

  it("stops a deleted user's token at once", async () => {
    const user = await t.addUser(org.id, 'member');
    await t.http().delete(`/api/users/${user.id}`).set(bearer(org.admin)).expect(204);
    expectUnauthorized(await me(user.token));
  });

  it('ends the tokens of a demoted user at the next request; a new sign-in has the new role', async () => {
    const user = await t.addUser(org.id, 'admin');
    expect((await t.http().get('/api/users').set(bearer(user))).status).toBe(200);
    await t.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send({ role: 'viewer' }).expect(200);
    expectUnauthorized(await t.http().get('/api/users').set(bearer(user)));
    const again = await t.http().post('/api/auth/login').send({ email: user.email, password: PASSWORD });
    expect((await t.http().get('/api/users').set(bearer(again.body))).status).toBe(403);
  });

  it('refuses a token without the credentials version', async () => {
    const { ver: _ver, ...withoutVersion } = claims;
    expectUnauthorized(await me(sign({ alg: 'HS256', typ: 'JWT' }, { ...withoutVersion, iat: now(), exp: now() + 60 }, secret)));
  });
});
