import { DataSource } from 'typeorm';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';

/**
 * Accounts as an attacker sees them: an organization's admin must not take over the instance
 * operator, and every credential change ends the sessions issued before it, on every instance
 * (two apps share the database here, as the API replicas do).
 */
describe('operator accounts and sessions', () => {
  let first: TestApp;
  let second: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    first = await createTestApp();
    second = await createTestApp();
    org = await first.newOrg('enterprise');
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  const userRow = async (id: string) =>
    (await first.app.get(DataSource).query('SELECT role, disabled, password_hash, is_operator FROM users WHERE id = $1', [id]))[0] as
      Record<string, unknown> | undefined;
  const me = (t: TestApp, user: { token: string }) => t.http().get('/api/auth/me').set(bearer(user));
  const refresh = (t: TestApp, refreshToken: string) => t.http().post('/api/auth/refresh').send({ refreshToken });
  const login = (t: TestApp, email: string, password = PASSWORD) => t.http().post('/api/auth/login').send({ email, password });

  describe("an organization's admin cannot take over an operator of that organization", () => {
    let operator: TestUser;
    beforeEach(async () => {
      operator = await first.addUser(org.id, 'admin', { isOperator: true });
    });

    it.each([
      ['reset its password', { password: 'a new password for the operator' }],
      ['disable it', { disabled: true }],
      ['demote it', { role: 'viewer' }],
    ])('cannot %s: 403, and the account is unchanged', async (_what, patch) => {
      const before = await userRow(operator.id);
      const res = await first.http().patch(`/api/users/${operator.id}`).set(bearer(org.admin)).send(patch);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', status: 403, message: expect.stringContaining('operator') as unknown });
      expect(await userRow(operator.id)).toEqual(before);
      expect((await login(first, operator.email)).status).toBe(200);
    });

    it('cannot delete it', async () => {
      const res = await first.http().delete(`/api/users/${operator.id}`).set(bearer(org.admin));
      expect(res.status).toBe(403);
      expect(await userRow(operator.id)).toMatchObject({ is_operator: true, disabled: false });
    });

    it('another operator can', async () => {
      const res = await first
        .http()
        .patch(`/api/users/${operator.id}`)
        .set(bearer(await first.addUser(org.id, 'admin', { isOperator: true })))
        .send({ role: 'member' });
      expect(res.status).toBe(200);
      expect(await userRow(operator.id)).toMatchObject({ role: 'member', is_operator: true });
    });

    it('cannot grant operator status through the users routes', async () => {
      const created = await first
        .http()
        .post('/api/users')
        .set(bearer(org.admin))
        .send({ email: `would-be-operator-${Date.now()}@test.example`, password: PASSWORD, role: 'admin', isOperator: true });
      expect(created.status).toBe(400);
      const member = await first.addUser(org.id, 'member');
      const patched = await first.http().patch(`/api/users/${member.id}`).set(bearer(org.admin)).send({ isOperator: true });
      expect(patched.status).toBe(400);
      expect(await userRow(member.id)).toMatchObject({ is_operator: false });
    });
  });

  describe('credential changes end every session issued before them, on every instance', () => {
    /** A user with two sessions: one from the helper (instance one), one from a login on instance two. */
    async function twoSessions(): Promise<{ user: TestUser; other: { token: string; refreshToken: string } }> {
      const user = await first.addUser(org.id, 'member');
      const res = await login(second, user.email);
      expect(res.status).toBe(200);
      return { user, other: { token: res.body.accessToken, refreshToken: res.body.refreshToken } };
    }

    async function expectEnded(sessions: Array<{ token: string; refreshToken: string }>): Promise<void> {
      for (const session of sessions) {
        for (const t of [first, second]) {
          const res = await me(t, session);
          expect(res.status).toBe(401);
          expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
        }
        expect((await refresh(second, session.refreshToken)).status).toBe(401);
      }
    }

    it('an own password change', async () => {
      const { user, other } = await twoSessions();
      const res = await second
        .http()
        .patch('/api/auth/me/password')
        .set(bearer(user))
        .send({ currentPassword: PASSWORD, newPassword: 'another correct horse battery' });
      expect(res.status).toBe(204);
      await expectEnded([{ token: user.token, refreshToken: user.refreshToken }, other]);
      expect((await login(first, user.email, 'another correct horse battery')).status).toBe(200);
    });

    it.each([
      ['an admin reset of the password', { password: 'reset by the admin, 12+' }],
      ['a disable', { disabled: true }],
      ['a role change', { role: 'viewer' }],
    ])('%s', async (_what, patch) => {
      const { user, other } = await twoSessions();
      expect((await first.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send(patch)).status).toBe(200);
      await expectEnded([{ token: user.token, refreshToken: user.refreshToken }, other]);
    });

    it('a delete', async () => {
      const { user, other } = await twoSessions();
      expect((await first.http().delete(`/api/users/${user.id}`).set(bearer(org.admin))).status).toBe(204);
      await expectEnded([{ token: user.token, refreshToken: user.refreshToken }, other]);
    });

    it('a change that ends nothing (the same role again) leaves sessions alone', async () => {
      const { user, other } = await twoSessions();
      expect((await first.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send({ role: 'member' })).status).toBe(200);
      expect((await me(second, user)).status).toBe(200);
      expect((await me(first, other)).status).toBe(200);
    });

    it("logout ends that session's refresh and access tokens; the other session refreshes and goes on", async () => {
      const { user, other } = await twoSessions();
      const res = await first.http().post('/api/auth/logout').set(bearer(user)).send({ refreshToken: user.refreshToken });
      expect(res.status).toBe(204);
      expect((await me(second, user)).status).toBe(401);
      expect((await refresh(second, user.refreshToken)).status).toBe(401);

      // The other session's access token ended too (tokens are per user), but its refresh token goes on.
      expect((await me(first, other)).status).toBe(401);
      const renewed = await refresh(first, other.refreshToken);
      expect(renewed.status).toBe(200);
      expect((await me(second, { token: renewed.body.accessToken })).status).toBe(200);
    });
  });
});
