import { DataSource } from 'typeorm';
import { withKey } from './support/api-keys';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg } from './support/test-app';

interface AuditEventBody {
  action: string;
  actor: { type: string; id: string | null; name: string | null; via: string | null };
  target: { type: string; id: string | null; name: string | null };
  outcome: string;
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null;
}

/**
 * The audit events that users, service accounts and API keys write, through the API: who made
 * each change, to what, what changed, and never a password, a key or a hash.
 */
describe('audit log of users and credentials', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(DataSource);
  });

  afterAll(async () => {
    await t.close();
  });

  type Caller = { token: string } | { accessToken: string };
  const post = (who: Caller, path: string, body: object = {}) => t.http().post(path).set(bearer(who)).send(body);
  const patch = (who: Caller, path: string, body: object) => t.http().patch(path).set(bearer(who)).send(body);

  /** The organization's events about `targetId` (of `action`, if given), newest first. */
  async function eventsOf(org: TestOrg, targetId: string, action?: string): Promise<AuditEventBody[]> {
    const query = `?targetId=${targetId}${action ? `&action=${action}` : ''}&limit=100`;
    const res = await t.http().get(`/api/audit-events${query}`).set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body.data as AuditEventBody[];
  }

  /** A token of the org admin from a password login: its events name `via: 'password'`. */
  async function passwordLogin(org: TestOrg): Promise<{ accessToken: string }> {
    const res = await t.http().post('/api/auth/login').send({ email: org.admin.email, password: PASSWORD });
    expect(res.status).toBe(200);
    return res.body as { accessToken: string };
  }

  it("records a user's creation, changes (a password by name only) and deletion, by the admin who made them", async () => {
    const org = await t.newOrg('enterprise');
    const session = await passwordLogin(org);
    const email = `audited-${Date.now()}@test.example`;
    const created = await post(session, '/api/users', { email, password: 'a long enough password', role: 'member' });
    expect(created.status).toBe(201);
    const userId = created.body.id as string;
    expect((await patch(org.admin, `/api/users/${userId}`, { role: 'viewer', disabled: true })).status).toBe(200);
    const newPassword = 'another long password';
    expect((await patch(org.admin, `/api/users/${userId}`, { password: newPassword })).status).toBe(200);
    expect((await t.http().delete(`/api/users/${userId}`).set(bearer(org.admin))).status).toBe(204);

    const events = await eventsOf(org, userId);
    expect(events.map((e) => e.action)).toEqual(['user.deleted', 'user.updated', 'user.updated', 'user.created']);
    const [deleted, password, changed, creation] = events;
    const target = { type: 'user', id: userId, name: email };
    expect(creation).toMatchObject({
      action: 'user.created',
      actor: { type: 'user', id: org.admin.id, name: org.admin.email, via: 'password' },
      target,
      outcome: 'success',
      changes: { after: { email, role: 'member', disabled: false, isOperator: false } },
    });
    expect(changed).toMatchObject({
      actor: { type: 'user', id: org.admin.id, name: org.admin.email },
      target,
      changes: { before: { role: 'member', disabled: false }, after: { role: 'viewer', disabled: true } },
    });
    expect(Object.keys(changed.changes!.after!).sort()).toEqual(['disabled', 'role']);
    expect(password).toMatchObject({ actor: { id: org.admin.id }, target, changes: { after: { password: '[redacted]' } } });
    expect(Object.keys(password.changes!.after!)).toEqual(['password']);
    expect(deleted).toMatchObject({
      actor: { type: 'user', id: org.admin.id },
      target,
      changes: { before: { email, role: 'viewer', disabled: true } },
    });
    const json = JSON.stringify(events);
    for (const secret of ['a long enough password', newPassword, '$argon2']) expect(json).not.toContain(secret);
  });

  it("records a user's own password change, by that user, without the password or its hash", async () => {
    const org = await t.newOrg('enterprise');
    const newPassword = 'my own new password';
    const res = await patch(org.member, '/api/auth/me/password', { currentPassword: PASSWORD, newPassword });
    expect(res.status).toBe(204);
    const [hash] = (await db.query(`SELECT password_hash FROM users WHERE id = $1`, [org.member.id])) as Array<{ password_hash: string }>;

    const events = await eventsOf(org, org.member.id, 'user.updated');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      actor: { type: 'user', id: org.member.id, name: org.member.email },
      target: { type: 'user', id: org.member.id, name: org.member.email },
      changes: { after: { password: '[redacted]' } },
    });
    const json = JSON.stringify(events[0]);
    expect(json).not.toContain(newPassword);
    expect(json).not.toContain(PASSWORD);
    expect(json).not.toContain(hash.password_hash);
  });

  it("records a service account's creation, changes and deletion", async () => {
    const org = await t.newOrg('enterprise');
    const created = await post(org.admin, '/api/service-accounts', { name: 'deployer', role: 'member' });
    expect(created.status).toBe(201);
    const accountId = created.body.id as string;
    expect((await patch(org.admin, `/api/service-accounts/${accountId}`, { name: 'releaser', disabled: true })).status).toBe(200);
    expect((await t.http().delete(`/api/service-accounts/${accountId}`).set(bearer(org.admin))).status).toBe(204);

    const events = await eventsOf(org, accountId);
    expect(events.map((e) => e.action)).toEqual(['service_account.deleted', 'service_account.updated', 'service_account.created']);
    const [deleted, updated, creation] = events;
    const actor = { type: 'user', id: org.admin.id, name: org.admin.email };
    expect(creation).toMatchObject({
      actor,
      target: { type: 'service_account', id: accountId, name: 'deployer' },
      changes: { after: { name: 'deployer', role: 'member', disabled: false } },
    });
    expect(updated).toMatchObject({
      actor,
      target: { type: 'service_account', id: accountId, name: 'releaser' },
      changes: { before: { name: 'deployer', disabled: false }, after: { name: 'releaser', disabled: true } },
    });
    expect(Object.keys(updated.changes!.after!).sort()).toEqual(['disabled', 'name']);
    expect(deleted).toMatchObject({
      actor,
      target: { type: 'service_account', id: accountId, name: 'releaser' },
      changes: { before: { name: 'releaser', role: 'member', disabled: true } },
    });
  });

  it("records an API key's creation, first use (once), rotation and revocation, and never its secret or hash", async () => {
    const org = await t.newOrg('enterprise');
    const account = await post(org.admin, '/api/service-accounts', { name: 'ci', role: 'admin' });
    const accountId = account.body.id as string;
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const issued = await post(org.admin, `/api/service-accounts/${accountId}/api-keys`, {
      name: 'deploy',
      scopes: ['users:read'],
      expiresAt,
    });
    expect(issued.status).toBe(201);
    const keyId = issued.body.id as string;
    const key = issued.body.key as string;

    // Two requests with the new key: one first use.
    for (let i = 0; i < 2; i++) expect((await t.http().get('/api/users').set(withKey(key))).status).toBe(200);
    const firstUses = await eventsOf(org, keyId, 'api_key.first_used');
    expect(firstUses).toHaveLength(1);
    expect(firstUses[0]).toMatchObject({
      actor: { type: 'api_key', id: keyId, name: 'deploy', via: 'key' },
      target: { type: 'api_key', id: keyId, name: 'deploy' },
      outcome: 'success',
    });

    const rotated = await post(org.admin, `/api/service-accounts/${accountId}/api-keys/${keyId}/rotate`, { graceSeconds: 60 });
    expect(rotated.status).toBe(200);
    const newKey = rotated.body.key as string;
    // The new secret's first request is no first use of the key.
    expect((await t.http().get('/api/users').set(withKey(newKey))).status).toBe(200);
    const [{ hash, previous_hash: previousHash }] = (await db.query(`SELECT hash, previous_hash FROM api_keys WHERE id = $1`, [
      keyId,
    ])) as Array<{ hash: string; previous_hash: string }>;
    expect((await t.http().delete(`/api/service-accounts/${accountId}/api-keys/${keyId}`).set(bearer(org.admin))).status).toBe(204);

    const events = await eventsOf(org, keyId);
    expect(events.map((e) => e.action)).toEqual(['api_key.revoked', 'api_key.rotated', 'api_key.first_used', 'api_key.created']);
    const [revoked, rotation, , creation] = events;
    const actor = { type: 'user', id: org.admin.id, name: org.admin.email };
    const target = { type: 'api_key', id: keyId, name: 'deploy' };
    expect(creation).toMatchObject({
      actor,
      target,
      changes: { after: { name: 'deploy', owner: { type: 'service_account', id: accountId }, scopes: ['users:read'], expiresAt } },
    });
    expect(rotation).toMatchObject({ actor, target, changes: { after: { graceSeconds: 60, previousValidUntil: expect.any(String) } } });
    expect(revoked).toMatchObject({ actor, target, changes: { after: { revokedAt: expect.any(String) } } });
    const json = JSON.stringify(events);
    for (const secret of [key, newKey, hash, previousHash]) expect(json).not.toContain(secret);
  });

  it('records a personal key, created by its owner, and its first use as the key', async () => {
    const org = await t.newOrg('enterprise');
    const issued = await post(org.member, '/api/auth/me/api-keys', { name: 'laptop' });
    expect(issued.status).toBe(201);
    const keyId = issued.body.id as string;
    for (let i = 0; i < 2; i++)
      expect(
        (
          await t
            .http()
            .get('/api/agents')
            .set(withKey(issued.body.key as string))
        ).status,
      ).toBe(200);

    const events = await eventsOf(org, keyId);
    expect(events.map((e) => e.action)).toEqual(['api_key.first_used', 'api_key.created']);
    expect(events[1]).toMatchObject({
      actor: { type: 'user', id: org.member.id, name: org.member.email },
      target: { type: 'api_key', id: keyId, name: 'laptop' },
      changes: { after: { name: 'laptop', owner: { type: 'user', id: org.member.id }, scopes: null } },
    });
    expect(events[0].actor).toMatchObject({ type: 'api_key', id: keyId, name: 'laptop', via: 'key' });
    expect(JSON.stringify(events)).not.toContain(issued.body.key as string);
  });

  it("records a change of the organization's key policy, before and after", async () => {
    const org = await t.newOrg('enterprise');
    expect((await t.http().put('/api/api-keys/policy').set(bearer(org.admin)).send({ maxLifetimeDays: 30 })).status).toBe(200);
    expect((await t.http().put('/api/api-keys/policy').set(bearer(org.admin)).send({ maxLifetimeDays: null })).status).toBe(200);

    const events = await eventsOf(org, org.id, 'api_key.policy_updated');
    expect(events).toHaveLength(2);
    const target = { type: 'api_key_policy', id: org.id };
    expect(events[1]).toMatchObject({
      actor: { type: 'user', id: org.admin.id, name: org.admin.email },
      target,
      changes: { before: { maxLifetimeDays: null }, after: { maxLifetimeDays: 30 } },
    });
    expect(events[0]).toMatchObject({ target, changes: { before: { maxLifetimeDays: 30 }, after: { maxLifetimeDays: null } } });
  });
});
