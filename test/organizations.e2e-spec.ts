import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

describe('organizations', () => {
  let t: TestApp;
  let org: TestOrg;
  let operator: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    org = await t.newOrg();
    operator = await t.addUser(org.id, 'admin', { isOperator: true });
  });
  afterAll(() => t.close());

  const slug = () => `acme-${Math.random().toString(36).slice(2, 10)}`;

  it('shows every user their own organization', async () => {
    const res = await t.http().get('/api/organizations/current').set(bearer(org.viewer));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: org.id,
      slug: org.slug,
      name: org.slug,
      tier: 'starter',
      rateLimitPerMinute: null,
      seatQuota: null,
      historyRetentionDays: null,
      createdAt: expect.any(String),
    });
  });

  it('lets an operator create an organization whose admin can sign in', async () => {
    const body = {
      slug: slug(),
      name: 'Acme Corp',
      tier: 'team',
      admin: { email: `boss-${slug()}@acme.example`, password: 'a long enough password' },
    };
    const res = await t.http().post('/api/organizations').set(bearer(operator)).send(body);
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/api/organizations/${res.body.id}`);
    expect(res.body).toMatchObject({ slug: body.slug, name: 'Acme Corp', tier: 'team', adminUserId: expect.any(String) });
    const login = await t.http().post('/api/auth/login').send(body.admin);
    expect(login.status).toBe(200);
    const me = await t.http().get('/api/auth/me').set(bearer(login.body));
    expect(me.body).toMatchObject({ tier: 'team', user: { role: 'admin', isOperator: false, organizationId: res.body.id } });
    const shown = await t.http().get(`/api/organizations/${res.body.id}`).set(bearer(operator));
    expect(shown.status).toBe(200);
    expect(shown.body.slug).toBe(body.slug);
  });

  it('refuses a taken slug and creates nothing when the admin email is taken', async () => {
    const first = {
      slug: slug(),
      name: 'One',
      tier: 'starter',
      admin: { email: `x-${slug()}@acme.example`, password: 'a long enough password' },
    };
    await t.http().post('/api/organizations').set(bearer(operator)).send(first).expect(201);
    const sameSlug = await t
      .http()
      .post('/api/organizations')
      .set(bearer(operator))
      .send({ ...first, admin: { ...first.admin, email: `y-${slug()}@acme.example` } });
    expect(sameSlug.status).toBe(409);
    expect(sameSlug.body.error.code).toBe('ORGANIZATION_SLUG_TAKEN');
    const second = { ...first, slug: slug() };
    const sameEmail = await t.http().post('/api/organizations').set(bearer(operator)).send(second);
    expect(sameEmail.status).toBe(409);
    expect(sameEmail.body.error.code).toBe('EMAIL_TAKEN');
    const list = await t.http().get('/api/organizations?limit=100').set(bearer(operator));
    expect(list.body.data.map((o: { slug: string }) => o.slug)).not.toContain(second.slug);
  });

  it('validates the body with details', async () => {
    const res = await t
      .http()
      .post('/api/organizations')
      .set(bearer(operator))
      .send({ slug: 'Bad Slug', tier: 'gold', admin: { email: 'nope' } });
    expect(res.status).toBe(400);
    const paths = res.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['slug', 'name', 'tier', 'admin.email', 'admin.password']));
  });

  it('lets only operators list and create organizations', async () => {
    for (const caller of [org.admin, org.member, org.viewer]) {
      const list = await t.http().get('/api/organizations').set(bearer(caller));
      expect(list.status).toBe(403);
      expect(list.body.error.code).toBe('FORBIDDEN');
      const create = await t
        .http()
        .post('/api/organizations')
        .set(bearer(caller))
        .send({ slug: slug(), name: 'x', tier: 'starter', admin: { email: `z-${slug()}@a.example`, password: 'a long enough password' } });
      expect(create.status).toBe(403);
    }
    const list = await t.http().get('/api/organizations').set(bearer(operator));
    expect(list.status).toBe(200);
    expect(list.body.data.length).toBeGreaterThan(0);
  });
});
