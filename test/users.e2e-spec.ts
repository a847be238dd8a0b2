import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

describe('users', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    [org, other] = [await t.newOrg(), await t.newOrg()];
  });
  afterAll(() => t.close());

  const newUser = (role = 'member') => ({
    email: `u-${Math.random().toString(36).slice(2, 10)}@test.example`,
    password: 'a long enough password',
    role,
  });

  it('lets an admin create, read, update and delete a user', async () => {
    const body = newUser();
    const created = await t.http().post('/api/users').set(bearer(org.admin)).send(body);
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`/api/users/${created.body.id}`);
    expect(created.body).toEqual({
      id: expect.any(String),
      organizationId: org.id,
      email: body.email,
      firstName: null,
      lastName: null,
      role: 'member',
      disabled: false,
      isOperator: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expect((await t.http().get(`/api/users/${id}`).set(bearer(org.admin))).body.email).toBe(body.email);
    const patched = await t.http().patch(`/api/users/${id}`).set(bearer(org.admin)).send({ role: 'viewer' });
    expect(patched.status).toBe(200);
    expect(patched.body.role).toBe('viewer');
    expect((await t.http().delete(`/api/users/${id}`).set(bearer(org.admin))).status).toBe(204);
    const gone = await t.http().get(`/api/users/${id}`).set(bearer(org.admin));
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: { code: 'USER_NOT_FOUND', message: `User '${id}' was not found`, status: 404 } });
  });

  it('refuses a second user with the same email, whatever its case', async () => {
    const body = newUser();
    await t.http().post('/api/users').set(bearer(org.admin)).send(body).expect(201);
    const again = await t
      .http()
      .post('/api/users')
      .set(bearer(other.admin))
      .send({ ...body, email: body.email.toUpperCase() });
    expect(again.status).toBe(409);
    // The same answer whichever organization holds the email: nothing of it shows.
    expect(again.body).toEqual({
      error: { code: 'EMAIL_TAKEN', message: 'This email cannot be used for a new user; choose another', status: 409 },
    });
  });

  it.each(['member', 'viewer'] as const)('forbids a %s to manage users', async (role) => {
    const caller = org[role];
    const attempts = [
      t.http().get('/api/users').set(bearer(caller)),
      t.http().post('/api/users').set(bearer(caller)).send(newUser()),
      t.http().get(`/api/users/${org.admin.id}`).set(bearer(caller)),
      t.http().patch(`/api/users/${org.admin.id}`).set(bearer(caller)).send({ role: 'viewer' }),
      t.http().delete(`/api/users/${org.admin.id}`).set(bearer(caller)),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String), status: 403 } });
    }
    expect((await t.http().get(`/api/users/${org.admin.id}`).set(bearer(org.admin))).body.role).toBe('admin');
  });

  it("keeps another organization's users invisible (404)", async () => {
    const target = other.member.id;
    for (const res of [
      await t.http().get(`/api/users/${target}`).set(bearer(org.admin)),
      await t.http().patch(`/api/users/${target}`).set(bearer(org.admin)).send({ role: 'admin' }),
      await t.http().delete(`/api/users/${target}`).set(bearer(org.admin)),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('USER_NOT_FOUND');
    }
    const list = await t.http().get('/api/users?limit=100').set(bearer(org.admin));
    expect(list.body.data.map((u: { organizationId: string }) => u.organizationId)).not.toContain(other.id);
    const still = await t.http().get(`/api/users/${target}`).set(bearer(other.admin));
    expect(still.body.role).toBe('member');
  });

  it('refuses unknown fields (mass assignment) and writes nothing', async () => {
    const body = { ...newUser(), organizationId: other.id, isOperator: true };
    const res = await t.http().post('/api/users').set(bearer(org.admin)).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['isOperator', 'organizationId']);
    for (const caller of [org.admin, other.admin]) {
      const list = await t.http().get('/api/users?limit=100').set(bearer(caller));
      expect(list.body.data.map((u: { email: string }) => u.email)).not.toContain(body.email);
    }
    const patch = await t.http().patch(`/api/users/${org.member.id}`).set(bearer(org.admin)).send({ isOperator: true });
    expect(patch.status).toBe(400);
    expect((await t.http().get(`/api/users/${org.member.id}`).set(bearer(org.admin))).body.isOperator).toBe(false);
  });

  it('answers a user without an email with "email is required", once', async () => {
    const { password, role } = newUser();
    const res = await t.http().post('/api/users').set(bearer(org.admin)).send({ password, role });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'VALIDATION_FAILED',
        message: 'The request is not valid',
        status: 400,
        details: [{ path: 'email', message: 'email is required' }],
      },
    });
  });

  it('refuses an admin demoting, disabling or deleting themselves', async () => {
    const admin = await t.addUser(org.id, 'admin');
    expect((await t.http().patch(`/api/users/${admin.id}`).set(bearer(admin)).send({ role: 'member' })).status).toBe(403);
    expect((await t.http().patch(`/api/users/${admin.id}`).set(bearer(admin)).send({ disabled: true })).status).toBe(403);
    expect((await t.http().delete(`/api/users/${admin.id}`).set(bearer(admin))).status).toBe(403);
  });

  it('answers a malformed id with 400', async () => {
    const res = await t.http().get('/api/users/not-a-uuid').set(bearer(org.admin));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'id', message: 'id must be a UUID' }] });
  });

  it('pages through users newest first without gaps or duplicates', async () => {
    const fresh = await t.newOrg();
    for (let i = 0; i < 12; i++) await t.http().post('/api/users').set(bearer(fresh.admin)).send(newUser('viewer')).expect(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: { data: { id: string }[]; nextCursor: string | null } } = await t
        .http()
        .get('/api/users')
        .query({ limit: 5, ...(cursor ? { cursor } : {}) })
        .set(bearer(fresh.admin));
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((u: { id: string }) => u.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toHaveLength(16);
    expect(new Set(seen).size).toBe(16);
    const all = (await t.http().get('/api/users?limit=100').set(bearer(fresh.admin))).body.data;
    expect(all.map((u: { id: string }) => u.id)).toEqual(seen);
    const dates = all.map((u: { createdAt: string }) => u.createdAt);
    expect([...dates].sort().reverse()).toEqual(dates);
  });

  it('refuses a bad limit or cursor', async () => {
    expect((await t.http().get('/api/users?limit=101').set(bearer(org.admin))).status).toBe(400);
    const bad = await t.http().get('/api/users?cursor=garbage').set(bearer(org.admin));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
  });
});
