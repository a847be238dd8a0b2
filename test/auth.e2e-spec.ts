import { bearer, createTestApp, PASSWORD, TestApp, TestOrg } from './support/test-app';

describe('authentication', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '1000', LOGIN_LIMIT_PER_EMAIL: '5' } });
    org = await t.newOrg();
  });
  afterAll(() => t.close());

  const login = (email: string, password: string) => t.http().post('/api/auth/login').send({ email, password });

  it('logs in with email and password and the token works', async () => {
    const res = await login(org.member.email.toUpperCase(), PASSWORD);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: 900,
      refreshToken: expect.stringMatching(/^rt_/),
    });
    const me = await t.http().get('/api/auth/me').set(bearer(res.body));
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ id: org.member.id, email: org.member.email, role: 'member' });
    expect(me.body.organization).toMatchObject({ id: org.id, slug: org.slug, tier: 'starter' });
    expect(me.body.tier).toBe('starter');
    expect(me.body.user.passwordHash).toBeUndefined();
  });

  it('answers a wrong password and an unknown email alike', async () => {
    const wrong = await login(org.viewer.email, 'not the password at all');
    const unknown = await login('nobody-at-all@test.example', 'not the password at all');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body).toEqual({ error: { code: 'INVALID_CREDENTIALS', message: expect.any(String), status: 401 } });
  });

  it('refuses a disabled user at login', async () => {
    const user = await t.addUser(org.id, 'viewer');
    await t.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send({ disabled: true }).expect(200);
    const res = await login(user.email, PASSWORD);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_CREDENTIALS');
  });

  it('limits brute force per email with 429 and Retry-After', async () => {
    const target = await t.addUser(org.id, 'viewer');
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await login(target.email, `guess-${i}`)).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    const blocked = await login(target.email, PASSWORD);
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String), status: 429 } });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('rotates refresh tokens', async () => {
    const first = (await login(org.admin.email, PASSWORD)).body;
    const second = await t.http().post('/api/auth/refresh').send({ refreshToken: first.refreshToken });
    expect(second.status).toBe(200);
    expect(second.body.refreshToken).not.toBe(first.refreshToken);
    expect((await t.http().get('/api/auth/me').set(bearer(second.body))).status).toBe(200);
    const third = await t.http().post('/api/auth/refresh').send({ refreshToken: second.body.refreshToken });
    expect(third.status).toBe(200);
  });

  it('revokes the whole family when an old refresh token is reused', async () => {
    const first = (await login(org.admin.email, PASSWORD)).body;
    const second = (await t.http().post('/api/auth/refresh').send({ refreshToken: first.refreshToken })).body;
    const reuse = await t.http().post('/api/auth/refresh').send({ refreshToken: first.refreshToken });
    expect(reuse.status).toBe(401);
    expect(reuse.body.error.code).toBe('INVALID_CREDENTIALS');
    const afterTheft = await t.http().post('/api/auth/refresh').send({ refreshToken: second.refreshToken });
    expect(afterTheft.status).toBe(401);
  });

  it('refuses an unknown refresh token', async () => {
    const res = await t.http().post('/api/auth/refresh').send({ refreshToken: 'rt_made-up' });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_CREDENTIALS');
  });

  it('logs out: the refresh family no longer works', async () => {
    const pair = (await login(org.member.email, PASSWORD)).body;
    const res = await t.http().post('/api/auth/logout').set(bearer(pair)).send({ refreshToken: pair.refreshToken });
    expect(res.status).toBe(204);
    const refresh = await t.http().post('/api/auth/refresh').send({ refreshToken: pair.refreshToken });
    expect(refresh.status).toBe(401);
  });

  it('lets a user change their own password but not their role', async () => {
    const user = await t.addUser(org.id, 'viewer');
    const sneaky = await t
      .http()
      .patch('/api/auth/me/password')
      .set(bearer(user))
      .send({ currentPassword: PASSWORD, newPassword: 'another long password', role: 'admin' });
    expect(sneaky.status).toBe(400);
    expect(sneaky.body.error.code).toBe('VALIDATION_FAILED');
    expect(sneaky.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'role' })]));
    expect((await login(user.email, PASSWORD)).status).toBe(200);
    const me = await t.http().get('/api/auth/me').set(bearer(user));
    expect(me.body.user.role).toBe('viewer');

    const wrong = await t
      .http()
      .patch('/api/auth/me/password')
      .set(bearer(user))
      .send({ currentPassword: 'nope', newPassword: 'another long password' });
    expect(wrong.status).toBe(401);
    const ok = await t
      .http()
      .patch('/api/auth/me/password')
      .set(bearer(user))
      .send({ currentPassword: PASSWORD, newPassword: 'another long password' });
    expect(ok.status).toBe(204);
    expect((await login(user.email, 'another long password')).status).toBe(200);
    expect((await login(user.email, PASSWORD)).status).toBe(401);
  });
});

describe('login limit per client IP', () => {
  it('limits attempts per client IP across emails', async () => {
    const strict = await createTestApp({ env: { LOGIN_LIMIT_PER_IP: '3' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (
            await strict
              .http()
              .post('/api/auth/login')
              .send({ email: `x${i}@test.example`, password: 'whatever' })
          ).status,
        );
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await strict.close();
    }
  });
});

describe('login limit per client IP behind a proxy (TRUST_PROXY=1)', () => {
  let proxied: TestApp;
  beforeAll(async () => {
    proxied = await createTestApp({ env: { TRUST_PROXY: '1', LOGIN_LIMIT_PER_IP: '30' } });
  });
  afterAll(() => proxied.close());

  const attempt = (forwardedFor: string, i: number) =>
    proxied
      .http()
      .post('/api/auth/login')
      .set('X-Forwarded-For', forwardedFor)
      .send({ email: `proxied-${i}-${Date.now()}@test.example`, password: 'whatever' });

  it('counts the address the proxy appended, whatever the client forged before it: the 31st try is refused', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await attempt(`10.${i}.${i}.${i}, 203.0.113.9`, i)).status);
    expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
    expect(statuses[30]).toBe(429);
    // Another client behind the same proxy is not affected.
    expect((await attempt('198.51.100.1', 99)).status).toBe(401);
  });

  it('never locks an account owner out: 10 wrong passwords from one address, then the right one from another succeeds', async () => {
    const org = await proxied.newOrg();
    const login = (forwardedFor: string, password: string) =>
      proxied.http().post('/api/auth/login').set('X-Forwarded-For', forwardedFor).send({ email: org.member.email, password });
    const fromAttacker: number[] = [];
    for (let i = 0; i < 11; i++) fromAttacker.push((await login('192.0.2.66', 'wrong password!')).status);
    expect(fromAttacker.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(fromAttacker[10]).toBe(429);
    expect((await login('192.0.2.66', PASSWORD)).status).toBe(429);
    const owner = await login('198.51.100.20', PASSWORD);
    expect(owner.status).toBe(200);
    expect(owner.body.accessToken).toEqual(expect.any(String));
  });

  it('counts an IPv6 client by its /64', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await attempt(`2001:db8:aa:bb::${(i + 1).toString(16)}`, 100 + i)).status);
    expect(statuses[29]).toBe(401);
    expect(statuses[30]).toBe(429);
  });
});
