import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { ApiKeyRepository } from '../src/modules/credentials/domain/api-key.repository';
import { install, registerAgent } from './support/agents';
import { checksumOf, DISPLAY_PREFIX_LENGTH, forgeKey, KEY_PATTERN, secretFormsOf, withCharacterChanged, withKey } from './support/api-keys';
import { burst } from './support/bursts';
import { eventually } from './support/eventually';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';
import { expectError } from './support/envelope';

/**
 * API keys for service accounts and people (issue 15), against the contract: service accounts,
 * keys (create, use, list, revoke, expiry, rotate), scopes, the owner's role, tenant isolation,
 * session-only routes, triggeredBy, the audit events and the limits. Each describe uses
 * organizations of its own, so no spec runs into another's rate-limit budget or key limit.
 */

const ALL_SCOPES = [
  'plugins:read',
  'plugins:write',
  'agents:read',
  'agents:write',
  'agents:execute',
  'workflows:read',
  'workflows:write',
  'workflows:run',
  'webhooks:read',
  'webhooks:write',
  'users:read',
  'users:write',
  'organization:read',
  'organization:write',
];
const KEY_FIELDS = ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'owner', 'prefix', 'scopes'];
const DAY_MS = 86_400_000;
const HOOK = 'http://127.0.0.1:9/hooks/platform';
const UPPERCASE = { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };
const INVALID_KEY = { error: { code: 'UNAUTHORIZED', message: 'The API key is not valid', status: 401 } };

interface KeyBody {
  id: string;
  name: string;
  prefix: string;
  scopes: string[] | null;
  owner: { type: 'service_account' | 'user'; id: string };
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  key: string;
}

interface AccountBody {
  id: string;
  name: string;
  role: string;
  disabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A user (its JWT) or an API key. */
type Caller = TestUser | string;

/** The one error envelope, with `details` naming `path` when one is given. */

/** 404 in the envelope with the resource's own code: the same answer for another organization's as for none. */
class NotFounds {
  private checked = 0;

  check(res: Response, ...codes: Array<'SERVICE_ACCOUNT_NOT_FOUND' | 'API_KEY_NOT_FOUND'>): void {
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 404,
      body: { error: { code: expect.any(String), message: expect.any(String), status: 404 } },
    });
    expect(codes).toContain(res.body.error.code);
    this.checked++;
  }

  /** At least one 404 was checked. */
  expectSomeChecked(): void {
    expect(this.checked).toBeGreaterThan(0);
  }
}

/** 403 FORBIDDEN whose message names the scope the key lacks. */
function expectMissingScope(res: Response, scope: string): void {
  expectError(res, 403, 'FORBIDDEN');
  expect(res.body.error.message).toContain(`'${scope}'`);
}

describe('API keys', () => {
  let t: TestApp;

  beforeAll(async () => {
    // Every refused key here comes from one address: room above the failures an address may have.
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1', LOGIN_LIMIT_PER_IP: '1000' } });
  });
  afterAll(() => t.close());

  const auth = (who: Caller) => bearer({ token: typeof who === 'string' ? who : who.token });
  const get = (who: Caller, path: string) => t.http().get(path).set(auth(who));
  const post = (who: Caller, path: string, body: object = {}) => t.http().post(path).set(auth(who)).send(body);
  const patch = (who: Caller, path: string, body: object) => t.http().patch(path).set(auth(who)).send(body);
  const put = (who: Caller, path: string, body: object) => t.http().put(path).set(auth(who)).send(body);
  const del = (who: Caller, path: string) => t.http().delete(path).set(auth(who));

  const serviceAccount = async (org: TestOrg, body: object = {}): Promise<AccountBody> => {
    const res = await post(org.admin, '/api/service-accounts', { name: 'ci', role: 'admin', ...body });
    if (res.status !== 201) throw new Error(`create service account: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as AccountBody;
  };
  const accountKey = async (org: TestOrg, accountId: string, body: object = {}): Promise<KeyBody> => {
    const res = await post(org.admin, `/api/service-accounts/${accountId}/api-keys`, { name: 'deploy', ...body });
    if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as KeyBody;
  };
  const personalKey = async (user: TestUser, body: object = {}): Promise<KeyBody> => {
    const res = await post(user, '/api/auth/me/api-keys', { name: 'laptop', ...body });
    if (res.status !== 201) throw new Error(`create personal key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as KeyBody;
  };
  /** A service account with `role` and one key (with `scopes`, if given). */
  const keyOf = async (org: TestOrg, role = 'admin', body: object = {}) => {
    const account = await serviceAccount(org, { role });
    return { account, ...(await accountKey(org, account.id, body)) };
  };
  const expectInvalidKey = (res: Response) =>
    expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 401, body: INVALID_KEY });
  /** Polls with the key until it is refused (caches may hold a key up to 500 ms), then checks the answer. */
  const refusedSoon = async (key: string, path = '/api/agents') => {
    let last: unknown;
    const res = await eventually(
      async () => {
        const r = await get(key, path);
        last = { status: r.status, body: r.body as unknown };
        return r.status !== 200 && r;
      },
      { intervalMs: 100, message: () => `the key to be refused (last: ${JSON.stringify(last)})` },
    );
    expectInvalidKey(res);
  };

  describe('service accounts', () => {
    let org: TestOrg;
    let other: TestOrg;
    beforeAll(async () => {
      [org, other] = [await t.newOrg('team'), await t.newOrg('team')];
    });

    it('lets an admin create, read, list, change and delete one', async () => {
      const notFound = new NotFounds();
      const created = await post(org.admin, '/api/service-accounts', { name: 'CI pipeline', role: 'member' });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.any(String),
        name: 'CI pipeline',
        role: 'member',
        disabled: false,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const id = created.body.id as string;
      const read = await get(org.admin, `/api/service-accounts/${id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);

      const list = await get(org.admin, '/api/service-accounts');
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: expect.any(Array), nextCursor: null });
      expect(list.body.data).toContainEqual(created.body);

      const changed = await patch(org.admin, `/api/service-accounts/${id}`, { name: 'CD pipeline', role: 'viewer', disabled: true });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ id, name: 'CD pipeline', role: 'viewer', disabled: true, createdAt: created.body.createdAt });
      expect((await get(org.admin, `/api/service-accounts/${id}`)).body).toEqual(changed.body);

      expect((await del(org.admin, `/api/service-accounts/${id}`)).status).toBe(204);
      notFound.check(await get(org.admin, `/api/service-accounts/${id}`), 'SERVICE_ACCOUNT_NOT_FOUND');
      expect((await get(org.admin, '/api/service-accounts')).body.data.map((a: AccountBody) => a.id)).not.toContain(id);
      notFound.expectSomeChecked();
    });

    it('pages the list with a cursor', async () => {
      const own = await t.newOrg('starter');
      const made = [
        await serviceAccount(own, { name: 'a' }),
        await serviceAccount(own, { name: 'b' }),
        await serviceAccount(own, { name: 'c' }),
      ];
      const first = await get(own.admin, '/api/service-accounts?limit=2');
      expect(first.status).toBe(200);
      expect(first.body.data).toHaveLength(2);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await get(own.admin, `/api/service-accounts?limit=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ data: [expect.any(Object)], nextCursor: null });
      const seen = [...first.body.data, ...second.body.data].map((a: AccountBody) => a.id).sort();
      expect(seen).toEqual(made.map((a) => a.id).sort());
    });

    it.each(['member', 'viewer'] as const)('answers a %s 403 on every route, and changes nothing', async (role) => {
      const account = await serviceAccount(org, { name: 'untouched' });
      const key = await accountKey(org, account.id);
      const caller = org[role];
      const base = `/api/service-accounts/${account.id}`;
      for (const res of [
        await post(caller, '/api/service-accounts', { name: 'mine', role: 'admin' }),
        await get(caller, '/api/service-accounts'),
        await get(caller, base),
        await patch(caller, base, { role: 'viewer' }),
        await del(caller, base),
        await post(caller, `${base}/api-keys`, { name: 'mine' }),
        await get(caller, `${base}/api-keys`),
        await post(caller, `${base}/api-keys/${key.id}/rotate`, { graceSeconds: 0 }),
        await del(caller, `${base}/api-keys/${key.id}`),
      ]) {
        expectError(res, 403, 'FORBIDDEN');
      }
      expect((await get(org.admin, base)).body).toEqual(account);
      expect((await get(key.key, '/api/agents')).status).toBe(200);
    });

    it("answers 404 NOT_FOUND for another organization's account and its keys, and changes nothing", async () => {
      const notFound = new NotFounds();
      const theirs = await serviceAccount(other, { name: 'theirs' });
      const theirKey = await accountKey(other, theirs.id);
      const mine = await serviceAccount(org, { name: 'mine' });
      const base = `/api/service-accounts/${theirs.id}`;
      for (const res of [
        await get(org.admin, base),
        await patch(org.admin, base, { name: 'taken', disabled: true }),
        await del(org.admin, base),
        await post(org.admin, `${base}/api-keys`, { name: 'sneaky' }),
        await get(org.admin, `${base}/api-keys`),
        await post(org.admin, `${base}/api-keys/${theirKey.id}/rotate`, { graceSeconds: 0 }),
        await del(org.admin, `${base}/api-keys/${theirKey.id}`),
        // Their key through one of my accounts.
        await post(org.admin, `/api/service-accounts/${mine.id}/api-keys/${theirKey.id}/rotate`, { graceSeconds: 0 }),
        await del(org.admin, `/api/service-accounts/${mine.id}/api-keys/${theirKey.id}`),
        await get(org.admin, `/api/service-accounts/${randomUUID()}`),
      ]) {
        notFound.check(res, 'SERVICE_ACCOUNT_NOT_FOUND', 'API_KEY_NOT_FOUND');
      }
      expect((await get(org.admin, '/api/service-accounts?limit=100')).body.data.map((a: AccountBody) => a.id)).not.toContain(theirs.id);
      expect((await get(other.admin, base)).body).toEqual(theirs);
      expect((await get(theirKey.key, '/api/agents')).status).toBe(200);
      notFound.expectSomeChecked();
    });

    it('refuses a bad body with 400 naming the field', async () => {
      expectError(await post(org.admin, '/api/service-accounts', { name: '', role: 'admin' }), 400, 'VALIDATION_FAILED', 'name');
      expectError(
        await post(org.admin, '/api/service-accounts', { name: 'x'.repeat(101), role: 'admin' }),
        400,
        'VALIDATION_FAILED',
        'name',
      );
      expectError(await post(org.admin, '/api/service-accounts', { role: 'admin' }), 400, 'VALIDATION_FAILED', 'name');
      expectError(await post(org.admin, '/api/service-accounts', { name: 'x', role: 'owner' }), 400, 'VALIDATION_FAILED', 'role');
      expectError(await post(org.admin, '/api/service-accounts', { name: 'x' }), 400, 'VALIDATION_FAILED', 'role');
      const account = await serviceAccount(org, { name: 'x'.repeat(100) });
      expectError(await patch(org.admin, `/api/service-accounts/${account.id}`, { role: 'owner' }), 400, 'VALIDATION_FAILED', 'role');
      expectError(await patch(org.admin, `/api/service-accounts/${account.id}`, { disabled: 'yes' }), 400, 'VALIDATION_FAILED', 'disabled');
    });
  });

  describe('keys', () => {
    let org: TestOrg;
    let agentId: string;
    beforeAll(async () => {
      org = await t.newOrg('team');
      await install(t, org, 'transform');
      agentId = await registerAgent(t, org, { name: 'upper', ...UPPERCASE });
    });

    it("creates a service account's key: 201, the key once, in the documented format", async () => {
      const account = await serviceAccount(org);
      const before = Date.now();
      const res = await post(org.admin, `/api/service-accounts/${account.id}/api-keys`, { name: 'deploy' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'deploy',
        prefix: expect.any(String),
        scopes: null,
        owner: { type: 'service_account', id: account.id },
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
        lastUsedAt: null,
        key: expect.stringMatching(KEY_PATTERN),
      });
      const key = res.body.key as string;
      expect(key.startsWith('plat_sa_')).toBe(true);
      expect(res.body.prefix).toBe(key.slice(0, DISPLAY_PREFIX_LENGTH));
      // The last 6 characters: CRC32 of everything before them, in base62.
      expect(key.slice(-6)).toBe(checksumOf(key.slice(0, -6)));
      // No expiresAt: 90 days.
      const expires = Date.parse(res.body.expiresAt as string);
      expect(expires).toBeGreaterThanOrEqual(before + 90 * DAY_MS - 60_000);
      expect(expires).toBeLessThanOrEqual(Date.now() + 90 * DAY_MS + 60_000);
      // Another key is another secret.
      const second = await accountKey(org, account.id);
      expect(second.key).not.toBe(key);
      expect(second.key.slice(8)).not.toBe(key.slice(8));
    });

    it('works as a bearer token with the same answers as a JWT', async () => {
      const { key } = await keyOf(org, 'admin');
      for (const path of ['/api/agents', `/api/agents/${agentId}`, '/api/plugins', '/api/organizations/current']) {
        const withJwt = await get(org.admin, path);
        const withKey = await get(key, path);
        expect({ path, status: withKey.status }).toEqual({ path, status: 200 });
        expect({ path, body: withKey.body as unknown }).toEqual({ path, body: withJwt.body as unknown });
      }
      expect((await get(key, '/api/agents')).body.data.map((a: { id: string }) => a.id)).toContain(agentId);
    });

    it('lists keys without the key or anything of its secret; lastUsedAt follows a use', async () => {
      const account = await serviceAccount(org);
      const created = await accountKey(org, account.id, { name: 'listed', scopes: ['agents:read'] });
      const { key, ...shown } = created;
      const list = await get(org.admin, `/api/service-accounts/${account.id}/api-keys`);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [shown], nextCursor: null });
      expect(Object.keys(list.body.data[0]).sort()).toEqual(KEY_FIELDS);
      for (const form of secretFormsOf(key)) expect(JSON.stringify(list.body)).not.toContain(form);

      expect((await get(key, '/api/agents')).status).toBe(200);
      const used = await eventually(
        async () => {
          const res = await get(org.admin, `/api/service-accounts/${account.id}/api-keys`);
          return res.body.data[0]?.lastUsedAt && res;
        },
        { intervalMs: 100, message: 'lastUsedAt to be set after a use' },
      );
      expect(Date.parse(used.body.data[0].lastUsedAt as string)).toBeGreaterThanOrEqual(Date.parse(created.createdAt) - 1000);
      for (const form of secretFormsOf(key)) expect(JSON.stringify(used.body)).not.toContain(form);
      // The account itself does not show the key either.
      expect(JSON.stringify((await get(org.admin, `/api/service-accounts/${account.id}`)).body)).not.toContain(
        key.slice(DISPLAY_PREFIX_LENGTH),
      );
    });

    it('refuses a revoked key with 401; revoking again or an unknown key is 404', async () => {
      const notFound = new NotFounds();
      const { account, id, key } = await keyOf(org);
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await del(org.admin, `/api/service-accounts/${account.id}/api-keys/${id}`)).status).toBe(204);
      await refusedSoon(key);
      expectInvalidKey(await get(key, `/api/agents/${agentId}`));
      notFound.check(await del(org.admin, `/api/service-accounts/${account.id}/api-keys/${randomUUID()}`), 'API_KEY_NOT_FOUND');
      notFound.expectSomeChecked();
    });

    it('refuses a revoked key with the very next request on the instance that answered the revoke (204)', async () => {
      const { account, id, key } = await keyOf(org);
      const kept = await accountKey(org, account.id);
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await get(kept.key, '/api/agents')).status).toBe(200);
      expect((await del(org.admin, `/api/service-accounts/${account.id}/api-keys/${id}`)).status).toBe(204);
      expectInvalidKey(await get(key, '/api/agents'));
      expect((await get(kept.key, '/api/agents')).status).toBe(200);

      // Rotating without grace ends the old secret as promptly, a personal key's too.
      const member = await t.addUser(org.id, 'member');
      const personal = await personalKey(member);
      expect((await get(personal.key, '/api/agents')).status).toBe(200);
      const rotated = await post(member, `/api/auth/me/api-keys/${personal.id}/rotate`, { graceSeconds: 0 });
      expect(rotated.status).toBe(200);
      expectInvalidKey(await get(personal.key, '/api/agents'));
      expect((await get(rotated.body.key as string, '/api/agents')).status).toBe(200);
      expect((await del(member, `/api/auth/me/api-keys/${personal.id}`)).status).toBe(204);
      expectInvalidKey(await get(rotated.body.key as string, '/api/agents'));
    });

    it('refuses what is not a valid key with 401', async () => {
      const { key } = await keyOf(org);
      for (const bad of [
        key.slice(0, -1),
        `${key}A`,
        key.replace('plat_sa_', 'plat_pk_'),
        key.replace('plat_sa_', 'plat_xx_'),
        forgeKey('plat_sa_'),
      ]) {
        expect({ bad, status: (await get(bad, '/api/agents')).status }).toEqual({ bad, status: 401 });
      }
      expectError(await t.http().get('/api/agents'), 401, 'UNAUTHORIZED');
    });

    it('gives any signed-in user personal keys that act as them, listed and revoked only by them', async () => {
      const notFound = new NotFounds();
      const member = await t.addUser(org.id, 'member');
      const res = await post(member, '/api/auth/me/api-keys', { name: 'laptop' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'laptop',
        prefix: (res.body.key as string).slice(0, DISPLAY_PREFIX_LENGTH),
        scopes: null,
        owner: { type: 'user', id: member.id },
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
        lastUsedAt: null,
        key: expect.stringMatching(/^plat_pk_[0-9A-Za-z]{49}$/),
      });
      const { key, ...shown } = res.body as KeyBody;
      expect(key.slice(-6)).toBe(checksumOf(key.slice(0, -6)));
      // Listed (before any use: lastUsedAt null) without the key.
      const mine = await get(member, '/api/auth/me/api-keys');
      expect(mine.status).toBe(200);
      expect(mine.body).toEqual({ data: [shown], nextCursor: null });
      for (const form of secretFormsOf(key)) expect(JSON.stringify(mine.body)).not.toContain(form);

      // The member's role: reads and executes, no admin route.
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'hi' } })).status).toBe(200);
      expectError(await post(key, '/api/agents', { name: 'x', ...UPPERCASE }), 403, 'FORBIDDEN');

      const viewer = await t.addUser(org.id, 'viewer');
      const viewerKey = await personalKey(viewer);
      expect((await get(viewerKey.key, '/api/agents')).status).toBe(200);
      expectError(await post(viewerKey.key, `/api/agents/${agentId}/execute`, { input: { text: 'hi' } }), 403, 'FORBIDDEN');

      expect((await get(viewer, '/api/auth/me/api-keys')).body.data.map((k: KeyBody) => k.id)).toEqual([viewerKey.id]);

      // Someone else, even an admin, cannot revoke or rotate it through their own /me.
      for (const caller of [viewer, org.admin]) {
        notFound.check(await del(caller, `/api/auth/me/api-keys/${shown.id}`), 'API_KEY_NOT_FOUND');
        notFound.check(await post(caller, `/api/auth/me/api-keys/${shown.id}/rotate`, { graceSeconds: 0 }), 'API_KEY_NOT_FOUND');
      }
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await del(member, `/api/auth/me/api-keys/${shown.id}`)).status).toBe(204);
      await refusedSoon(key);
      expect((await get(viewerKey.key, '/api/agents')).status).toBe(200);
      notFound.expectSomeChecked();
    });
  });

  describe('expiry', () => {
    let team: TestOrg;
    let enterprise: TestOrg;
    beforeAll(async () => {
      [team, enterprise] = [await t.newOrg('team'), await t.newOrg('enterprise')];
    });

    it('refuses a key once its expiresAt has passed', async () => {
      const expiresAt = new Date(Date.now() + 3000).toISOString();
      const { key, expiresAt: shown } = await keyOf(team, 'admin', { expiresAt });
      expect(Date.parse(shown as string)).toBe(Date.parse(expiresAt));
      expect((await get(key, '/api/agents')).status).toBe(200);
      let last: number | undefined;
      const refused = await eventually(
        async () => {
          const res = await get(key, '/api/agents');
          last = res.status;
          return res.status !== 200 && res;
        },
        { timeoutMs: 15_000, intervalMs: 250, message: () => `the expired key to be refused (last: ${last})` },
      );
      expectInvalidKey(refused);
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    });

    it('refuses an expiresAt in the past or not a date with 400 naming expiresAt', async () => {
      const account = await serviceAccount(team);
      for (const expiresAt of [new Date(Date.now() - 60_000).toISOString(), 'tomorrow', 42]) {
        expectError(
          await post(team.admin, `/api/service-accounts/${account.id}/api-keys`, { name: 'x', expiresAt }),
          400,
          'VALIDATION_FAILED',
          'expiresAt',
        );
      }
      expectError(
        await post(team.member, '/api/auth/me/api-keys', { name: 'x', expiresAt: '2001-01-01T00:00:00Z' }),
        400,
        'VALIDATION_FAILED',
        'expiresAt',
      );
      expect((await get(team.admin, `/api/service-accounts/${account.id}/api-keys`)).body.data).toEqual([]);
    });

    it('allows a key that never expires (expiresAt null) on enterprise only', async () => {
      const account = await serviceAccount(team);
      expectError(
        await post(team.admin, `/api/service-accounts/${account.id}/api-keys`, { name: 'forever', expiresAt: null }),
        403,
        'FEATURE_NOT_AVAILABLE',
      );
      expectError(await post(team.member, '/api/auth/me/api-keys', { name: 'forever', expiresAt: null }), 403, 'FEATURE_NOT_AVAILABLE');
      expect((await get(team.admin, `/api/service-accounts/${account.id}/api-keys`)).body.data).toEqual([]);

      const forever = await keyOf(enterprise, 'admin', { expiresAt: null });
      expect(forever.expiresAt).toBeNull();
      expect((await get(forever.key, '/api/agents')).status).toBe(200);
      expect((await personalKey(enterprise.member, { expiresAt: null })).expiresAt).toBeNull();
    });

    it("applies the organization's cap: a later expiresAt is 400, none takes the cap, null is refused", async () => {
      const own = await t.newOrg('enterprise');
      expect((await get(own.admin, '/api/api-keys/policy')).body).toEqual({ maxLifetimeDays: null });
      for (const caller of [own.member, own.viewer])
        expectError(await put(caller, '/api/api-keys/policy', { maxLifetimeDays: 7 }), 403, 'FORBIDDEN');
      for (const maxLifetimeDays of [0, 3651, 1.5, '7']) {
        expectError(await put(own.admin, '/api/api-keys/policy', { maxLifetimeDays }), 400, 'VALIDATION_FAILED', 'maxLifetimeDays');
      }
      expect((await get(own.admin, '/api/api-keys/policy')).body).toEqual({ maxLifetimeDays: null });

      expect([200, 204]).toContain((await put(own.admin, '/api/api-keys/policy', { maxLifetimeDays: 7 })).status);
      expect((await get(own.admin, '/api/api-keys/policy')).body).toEqual({ maxLifetimeDays: 7 });
      const account = await serviceAccount(own);
      const path = `/api/service-accounts/${account.id}/api-keys`;
      expectError(
        await post(own.admin, path, { name: 'x', expiresAt: new Date(Date.now() + 8 * DAY_MS).toISOString() }),
        400,
        'VALIDATION_FAILED',
        'expiresAt',
      );
      expectError(
        await post(own.member, '/api/auth/me/api-keys', { name: 'x', expiresAt: new Date(Date.now() + 8 * DAY_MS).toISOString() }),
        400,
        'VALIDATION_FAILED',
        'expiresAt',
      );
      expectError(await post(own.admin, path, { name: 'x', expiresAt: null }), 400, 'VALIDATION_FAILED');

      const within = new Date(Date.now() + 6 * DAY_MS).toISOString();
      expect(Date.parse((await accountKey(own, account.id, { expiresAt: within })).expiresAt as string)).toBe(Date.parse(within));
      const before = Date.now();
      const capped = Date.parse((await accountKey(own, account.id)).expiresAt as string);
      expect(capped).toBeGreaterThanOrEqual(before + 7 * DAY_MS - 60_000);
      expect(capped).toBeLessThanOrEqual(Date.now() + 7 * DAY_MS + 60_000);

      // No cap again: null is allowed again.
      expect([200, 204]).toContain((await put(own.admin, '/api/api-keys/policy', { maxLifetimeDays: null })).status);
      expect((await get(own.admin, '/api/api-keys/policy')).body).toEqual({ maxLifetimeDays: null });
      expect((await accountKey(own, account.id, { expiresAt: null })).expiresAt).toBeNull();
    });
  });

  describe('rotate', () => {
    let org: TestOrg;
    beforeAll(async () => {
      org = await t.newOrg('team');
    });

    it('answers a new key; the old one keeps working for graceSeconds, then 401', async () => {
      const { account, key: old, ...created } = await keyOf(org);
      const res = await post(org.admin, `/api/service-accounts/${account.id}/api-keys/${created.id}/rotate`, { graceSeconds: 3 });
      expect(res.status).toBe(200);
      // The same key (its id, name, owner, scopes) with a new secret.
      expect(Object.keys(res.body).sort()).toEqual([...KEY_FIELDS, 'key'].sort());
      expect(res.body).toMatchObject({
        id: created.id,
        name: created.name,
        owner: created.owner,
        scopes: created.scopes,
        createdAt: created.createdAt,
        prefix: (res.body.key as string).slice(0, DISPLAY_PREFIX_LENGTH),
        key: expect.stringMatching(/^plat_sa_[0-9A-Za-z]{49}$/),
      });
      const fresh = res.body.key as string;
      expect(fresh).not.toBe(old);
      expect(fresh.slice(-6)).toBe(checksumOf(fresh.slice(0, -6)));

      // Within the grace both work.
      expect((await get(old, '/api/agents')).status).toBe(200);
      expect((await get(fresh, '/api/agents')).status).toBe(200);
      let last: number | undefined;
      const refused = await eventually(
        async () => {
          const r = await get(old, '/api/agents');
          last = r.status;
          return r.status !== 200 && r;
        },
        { timeoutMs: 15_000, intervalMs: 250, message: () => `the rotated-out key to be refused (last: ${last})` },
      );
      expectInvalidKey(refused);
      expect((await get(fresh, '/api/agents')).status).toBe(200);

      const list = await get(org.admin, `/api/service-accounts/${account.id}/api-keys`);
      expect(list.body.data.map((k: KeyBody) => k.prefix)).toEqual([fresh.slice(0, DISPLAY_PREFIX_LENGTH)]);
      for (const form of [...secretFormsOf(old), ...secretFormsOf(fresh)]) expect(JSON.stringify(list.body)).not.toContain(form);
    });

    it('with graceSeconds 0 the old key stops; a personal key rotates through /me', async () => {
      const { account, id, key } = await keyOf(org);
      const res = await post(org.admin, `/api/service-accounts/${account.id}/api-keys/${id}/rotate`, { graceSeconds: 0 });
      expect(res.status).toBe(200);
      await refusedSoon(key);
      expect((await get(res.body.key as string, '/api/agents')).status).toBe(200);

      const mine = await personalKey(org.member);
      const rotated = await post(org.member, `/api/auth/me/api-keys/${mine.id}/rotate`, { graceSeconds: 0 });
      expect(rotated.status).toBe(200);
      expect(rotated.body).toMatchObject({
        id: mine.id,
        owner: { type: 'user', id: org.member.id },
        key: expect.stringMatching(/^plat_pk_/),
      });
      await refusedSoon(mine.key);
      expect((await get(rotated.body.key as string, '/api/agents')).status).toBe(200);
    });

    it('refuses a bad graceSeconds with 400, and an unknown or revoked key with 404', async () => {
      const notFound = new NotFounds();
      const { account, id, key } = await keyOf(org);
      const path = `/api/service-accounts/${account.id}/api-keys/${id}/rotate`;
      for (const graceSeconds of [-1, 604_801, 1.5, 'soon']) {
        expectError(await post(org.admin, path, { graceSeconds }), 400, 'VALIDATION_FAILED', 'graceSeconds');
      }
      expect((await get(key, '/api/agents')).status).toBe(200);
      notFound.check(
        await post(org.admin, `/api/service-accounts/${account.id}/api-keys/${randomUUID()}/rotate`, { graceSeconds: 0 }),
        'API_KEY_NOT_FOUND',
      );
      expect((await del(org.admin, `/api/service-accounts/${account.id}/api-keys/${id}`)).status).toBe(204);
      notFound.check(await post(org.admin, path, { graceSeconds: 0 }), 'API_KEY_NOT_FOUND');
      await refusedSoon(key);
      notFound.expectSomeChecked();
    });
  });

  describe('the checksum', () => {
    let org: TestOrg;
    beforeAll(async () => {
      org = await t.newOrg('team');
    });

    it('refuses a key with a changed character with 401 without reading the database; an unknown well-formed key is looked up', async () => {
      const { key } = await keyOf(org);
      const repository = t.app.get(ApiKeyRepository, { strict: false });
      const lookups = jest.spyOn(repository, 'findByHash');
      try {
        for (const bad of [withCharacterChanged(key, -1), withCharacterChanged(key, -6), withCharacterChanged(key, 20)]) {
          expect(bad).toMatch(KEY_PATTERN);
          expectInvalidKey(await get(bad, '/api/agents'));
        }
        expect(lookups).not.toHaveBeenCalled();

        const unknown = forgeKey('plat_sa_');
        expect(unknown).toMatch(KEY_PATTERN);
        expectInvalidKey(await get(unknown, '/api/agents'));
        expect(lookups).toHaveBeenCalled();

        lookups.mockClear();
        expectInvalidKey(await get(forgeKey('plat_pk_'), '/api/agents'));
        expect(lookups).toHaveBeenCalled();
      } finally {
        lookups.mockRestore();
      }
      expect((await get(key, '/api/agents')).status).toBe(200);
    });
  });

  describe('scopes', () => {
    let org: TestOrg;
    let agentId: string;
    let workflowId: string;
    let webhookId: string;
    let executionId: string;
    let runId: string;
    beforeAll(async () => {
      org = await t.newOrg('enterprise');
      await install(t, org, 'transform');
      agentId = await registerAgent(t, org, { name: 'upper', ...UPPERCASE });
      const workflow = await post(org.admin, '/api/workflows', {
        name: 'wf',
        steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }],
      });
      expect(workflow.status).toBe(201);
      workflowId = workflow.body.id as string;
      const webhook = await post(org.admin, '/api/webhooks', { url: HOOK, eventTypes: ['plugin.installed'] });
      expect(webhook.status).toBe(201);
      webhookId = webhook.body.id as string;
      const executed = await post(org.admin, `/api/agents/${agentId}/execute`, { input: { text: 'a' } });
      expect(executed.status).toBe(200);
      executionId = executed.body.id as string;
      const ran = await post(org.admin, `/api/workflows/${workflowId}/run`, { input: { x: 1 } });
      expect(ran.status).toBe(200);
      runId = ran.body.id as string;
    });

    const families: Array<[string, string, (key: string) => Promise<Response>]> = [
      ['plugins', '/api/plugins', (key) => post(key, '/api/plugins/http/install', { config: {} })],
      ['agents', '/api/agents', (key) => post(key, '/api/agents', { name: 'scoped', ...UPPERCASE })],
      [
        'workflows',
        '/api/workflows',
        (key) =>
          post(key, '/api/workflows', { name: 'scoped', steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }] }),
      ],
      ['webhooks', '/api/webhooks', (key) => post(key, '/api/webhooks', { url: HOOK, eventTypes: ['plugin.installed'] })],
      // Creating a user sets a password, which no key may do (see below): a key's write here is enabling one.
      ['users', '/api/users', (key) => patch(key, `/api/users/${org.viewer.id}`, { disabled: false })],
      ['organization', '/api/subscription', (key) => patch(key, '/api/subscription', { rateLimitPerMinute: 5000 })],
    ];

    it.each(families)(
      '%s: a key with only :read reads, and gets 403 naming :write on a write; with :write too it writes',
      async (family, readPath, write) => {
        const reader = await keyOf(org, 'admin', { scopes: [`${family}:read`] });
        expect(reader.scopes).toEqual([`${family}:read`]);
        expect((await get(reader.key, readPath)).status).toBe(200);
        expectMissingScope(await write(reader.key), `${family}:write`);

        const writer = await keyOf(org, 'admin', { scopes: [`${family}:read`, `${family}:write`] });
        const written = await write(writer.key);
        expect({ family, status: written.status, ok: [200, 201].includes(written.status) }).toEqual({
          family,
          status: written.status,
          ok: true,
        });
      },
    );

    it('a scope of one family does not open another', async () => {
      const { key } = await keyOf(org, 'admin', { scopes: ['agents:read'] });
      expectMissingScope(await get(key, '/api/users'), 'users:read');
      expectMissingScope(await get(key, '/api/workflows'), 'workflows:read');
      expectMissingScope(await get(key, '/api/webhooks'), 'webhooks:read');
      expectMissingScope(await get(key, '/api/plugins'), 'plugins:read');
      expectMissingScope(await get(key, '/api/subscription'), 'organization:read');
      expectMissingScope(await get(key, '/api/license'), 'organization:read');
      expectMissingScope(await get(key, '/api/auth/saml'), 'organization:read');
    });

    it('agents:execute allows execute, not a change; without it execute and cancel are 403', async () => {
      const runner = await keyOf(org, 'admin', { scopes: ['agents:read', 'agents:execute'] });
      const executed = await post(runner.key, `/api/agents/${agentId}/execute`, { input: { text: 'scoped' } });
      expect(executed.status).toBe(200);
      expect(executed.body.output).toBe('SCOPED');
      expectMissingScope(await patch(runner.key, `/api/agents/${agentId}`, { name: 'renamed' }), 'agents:write');
      expectMissingScope(await del(runner.key, `/api/agents/${agentId}`), 'agents:write');

      const reader = await keyOf(org, 'admin', { scopes: ['agents:read'] });
      expect((await get(reader.key, `/api/agents/${agentId}/history`)).status).toBe(200);
      expectMissingScope(await post(reader.key, `/api/agents/${agentId}/execute`, { input: { text: 'no' } }), 'agents:execute');
      expectMissingScope(await post(reader.key, `/api/agents/${agentId}/history/${executionId}/cancel`), 'agents:execute');
      expect((await get(org.admin, `/api/agents/${agentId}`)).body.name).toBe('upper');
    });

    it('workflows:run allows a run, not a change; without it run and cancel are 403', async () => {
      const runner = await keyOf(org, 'admin', { scopes: ['workflows:read', 'workflows:run'] });
      const ran = await post(runner.key, `/api/workflows/${workflowId}/run`, { input: { x: 2 } });
      expect(ran.status).toBe(200);
      expect(ran.body.status).toBe('succeeded');
      expectMissingScope(
        await put(runner.key, `/api/workflows/${workflowId}`, {
          name: 'wf2',
          steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }],
        }),
        'workflows:write',
      );
      expectMissingScope(await del(runner.key, `/api/workflows/${workflowId}`), 'workflows:write');

      const reader = await keyOf(org, 'admin', { scopes: ['workflows:read'] });
      expect((await get(reader.key, `/api/workflows/${workflowId}/runs`)).status).toBe(200);
      expectMissingScope(await post(reader.key, `/api/workflows/${workflowId}/run`, { input: {} }), 'workflows:run');
      expectMissingScope(await post(reader.key, `/api/workflows/${workflowId}/runs/${runId}/cancel`), 'workflows:run');
      expect((await get(org.admin, `/api/workflows/${workflowId}`)).body.name).toBe('wf');
    });

    it('webhooks: test, rotate and recover need webhooks:write', async () => {
      const { key } = await keyOf(org, 'admin', { scopes: ['webhooks:read'] });
      expect((await get(key, `/api/webhooks/${webhookId}`)).status).toBe(200);
      expectMissingScope(await post(key, `/api/webhooks/${webhookId}/test`), 'webhooks:write');
      expectMissingScope(await post(key, `/api/webhooks/${webhookId}/rotate-secret`, { graceSeconds: 0 }), 'webhooks:write');
      expectMissingScope(await post(key, `/api/webhooks/${webhookId}/recover`), 'webhooks:write');
    });

    it('a key without scopes can do everything its role allows', async () => {
      const { key, scopes } = await keyOf(org, 'admin');
      expect(scopes).toBeNull();
      expect((await post(key, '/api/agents', { name: 'unscoped', ...UPPERCASE })).status).toBe(201);
      expect((await get(key, '/api/users')).status).toBe(200);
    });
  });

  describe("the owner's role", () => {
    let org: TestOrg;
    let agentId: string;
    beforeAll(async () => {
      org = await t.newOrg('enterprise');
      await install(t, org, 'transform');
      agentId = await registerAgent(t, org, { name: 'upper', ...UPPERCASE });
    });

    it("caps a member's key with every scope at the member's role", async () => {
      const { key } = await personalKey(org.member, { scopes: ALL_SCOPES });
      expect((await get(key, '/api/agents')).status).toBe(200);
      expectError(
        await post(key, '/api/users', {
          email: `m-${randomUUID().slice(0, 8)}@test.example`,
          password: 'a long enough password',
          role: 'admin',
        }),
        403,
        'FORBIDDEN',
      );
      expectError(await post(key, '/api/service-accounts', { name: 'escalate', role: 'admin' }), 403, 'FORBIDDEN');
      expectError(await post(key, '/api/agents', { name: 'x', ...UPPERCASE }), 403, 'FORBIDDEN');
      expectError(await put(key, '/api/api-keys/policy', { maxLifetimeDays: 1 }), 403, 'FORBIDDEN');
      expect((await get(org.admin, '/api/service-accounts')).body.data).toEqual([]);
    });

    it("acts with the personal key owner's role at the time of the request", async () => {
      const member = await t.addUser(org.id, 'member');
      const { key } = await personalKey(member);
      expect((await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'a' } })).status).toBe(200);
      expect((await patch(org.admin, `/api/users/${member.id}`, { role: 'viewer' })).status).toBe(200);
      const refused = await eventually(
        async () => {
          const res = await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'b' } });
          return res.status !== 200 && res;
        },
        { intervalMs: 100, message: 'the demoted member to be refused' },
      );
      expectError(refused, 403, 'FORBIDDEN');
      expect((await get(key, '/api/agents')).status).toBe(200);
    });

    it("acts with the service account's current role", async () => {
      const { account, key } = await keyOf(org, 'viewer');
      expectError(await get(key, '/api/users'), 403, 'FORBIDDEN');
      expectError(await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'a' } }), 403, 'FORBIDDEN');
      expect((await patch(org.admin, `/api/service-accounts/${account.id}`, { role: 'admin' })).status).toBe(200);
      const allowed = await eventually(
        async () => {
          const res = await get(key, '/api/users');
          return res.status === 200 && res;
        },
        { intervalMs: 100, message: 'the promoted account to be allowed' },
      );
      expect(allowed.body.data).toEqual(expect.any(Array));
    });

    it("never carries an operator's rights", async () => {
      const operator = await t.addUser(org.id, 'admin', { isOperator: true });
      expect((await get(operator, '/api/organizations')).status).toBe(200);
      const { key } = await personalKey(operator);
      expectError(await get(key, '/api/organizations'), 403, 'FORBIDDEN');
      expectError(await get(key, `/api/organizations/${org.id}`), 403, 'FORBIDDEN');
      expect((await get(key, '/api/license')).status).toBe(200);
    });
  });

  describe("the owner's state", () => {
    let org: TestOrg;
    beforeAll(async () => {
      org = await t.newOrg('team');
    });

    it("refuses a service account's keys while it is disabled", async () => {
      const { account, key } = await keyOf(org);
      const other = await keyOf(org);
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await patch(org.admin, `/api/service-accounts/${account.id}`, { disabled: true })).status).toBe(200);
      await refusedSoon(key);
      expect((await get(other.key, '/api/agents')).status).toBe(200);
    });

    it("refuses a deleted service account's keys", async () => {
      const { account, key } = await keyOf(org);
      expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await del(org.admin, `/api/service-accounts/${account.id}`)).status).toBe(204);
      await refusedSoon(key);
    });

    it("refuses a personal key after its owner's password change; a failed change changes nothing", async () => {
      const user = await t.addUser(org.id, 'member');
      const { key } = await personalKey(user);
      const bystander = await personalKey(await t.addUser(org.id, 'member'));
      expect((await get(key, '/api/agents')).status).toBe(200);

      const wrong = await patch(user, '/api/auth/me/password', {
        currentPassword: 'not the password',
        newPassword: 'a brand new password',
      });
      expect(wrong.status).not.toBe(204);
      expect((await get(key, '/api/agents')).status).toBe(200);

      const newPassword = 'a brand new password';
      expect((await patch(user, '/api/auth/me/password', { currentPassword: PASSWORD, newPassword })).status).toBe(204);
      await refusedSoon(key);
      expect((await get(bystander.key, '/api/agents')).status).toBe(200);

      // A key made after the change works.
      const login = await t.http().post('/api/auth/login').send({ email: user.email, password: newPassword });
      expect(login.status).toBe(200);
      const after = await personalKey({ ...user, token: login.body.accessToken as string });
      expect((await get(after.key, '/api/agents')).status).toBe(200);
    });

    it('refuses the personal keys of a disabled or deleted user', async () => {
      const disabled = await t.addUser(org.id, 'member');
      const deleted = await t.addUser(org.id, 'viewer');
      const [a, b] = [await personalKey(disabled), await personalKey(deleted)];
      expect((await get(a.key, '/api/agents')).status).toBe(200);
      expect((await get(b.key, '/api/agents')).status).toBe(200);
      expect((await patch(org.admin, `/api/users/${disabled.id}`, { disabled: true })).status).toBe(200);
      expect((await del(org.admin, `/api/users/${deleted.id}`)).status).toBe(204);
      await refusedSoon(a.key);
      await refusedSoon(b.key);
    });
  });

  describe("the owner's state, with the very next request", () => {
    let org: TestOrg;
    beforeAll(async () => {
      org = await t.newOrg('team');
    });

    it('refuses the keys of a service account disabled or deleted, at once on the instance that answered', async () => {
      const disabled = await keyOf(org);
      const deleted = await keyOf(org);
      expect((await get(disabled.key, '/api/agents')).status).toBe(200);
      expect((await get(deleted.key, '/api/agents')).status).toBe(200);
      expect((await patch(org.admin, `/api/service-accounts/${disabled.account.id}`, { disabled: true })).status).toBe(200);
      expectInvalidKey(await get(disabled.key, '/api/agents'));
      expect((await del(org.admin, `/api/service-accounts/${deleted.account.id}`)).status).toBe(204);
      expectInvalidKey(await get(deleted.key, '/api/agents'));
    });

    it('refuses the personal keys of a user disabled, deleted or with a new password, at once', async () => {
      const [disabled, deleted, renewed] = [
        await t.addUser(org.id, 'member'),
        await t.addUser(org.id, 'viewer'),
        await t.addUser(org.id, 'member'),
      ];
      const keys = [await personalKey(disabled), await personalKey(deleted), await personalKey(renewed)];
      for (const { key } of keys) expect((await get(key, '/api/agents')).status).toBe(200);
      expect((await patch(org.admin, `/api/users/${disabled.id}`, { disabled: true })).status).toBe(200);
      expectInvalidKey(await get(keys[0].key, '/api/agents'));
      expect((await del(org.admin, `/api/users/${deleted.id}`)).status).toBe(204);
      expectInvalidKey(await get(keys[1].key, '/api/agents'));
      const changed = await patch(renewed, '/api/auth/me/password', { currentPassword: PASSWORD, newPassword: 'a brand new password' });
      expect(changed.status).toBe(204);
      expectInvalidKey(await get(keys[2].key, '/api/agents'));
    });
  });

  describe('tenant isolation', () => {
    it("treats another organization's resources as missing, and lists only the key's organization", async () => {
      const [a, b] = [await t.newOrg('team'), await t.newOrg('team')];
      await install(t, a, 'transform');
      await install(t, b, 'transform');
      const mine = await registerAgent(t, a, { name: 'mine', ...UPPERCASE });
      const theirs = await registerAgent(t, b, { name: 'theirs', ...UPPERCASE });
      const { key } = await keyOf(a, 'admin');

      for (const [method, send] of [
        ['GET', (who: Caller) => get(who, `/api/agents/${theirs}`)],
        ['PATCH', (who: Caller) => patch(who, `/api/agents/${theirs}`, { name: 'stolen' })],
        ['execute', (who: Caller) => post(who, `/api/agents/${theirs}/execute`, { input: { text: 'x' } })],
        ['history', (who: Caller) => get(who, `/api/agents/${theirs}/history`)],
        ['DELETE', (who: Caller) => del(who, `/api/agents/${theirs}`)],
      ] as const) {
        const withJwt = await send(a.admin);
        const withKey = await send(key);
        expect({ method, status: withKey.status, body: withKey.body as unknown }).toEqual({
          method,
          status: 404,
          body: withJwt.body as unknown,
        });
        expect(withKey.body.error.code).toBe('AGENT_NOT_FOUND');
      }
      const list = await get(key, '/api/agents?limit=100');
      expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([mine]);
      expect((await get(b.admin, `/api/agents/${theirs}`)).body.name).toBe('theirs');
    });
  });

  describe('session-only routes', () => {
    it('answer 403 FORBIDDEN to any key, and change nothing', async () => {
      const org = await t.newOrg('team');
      const { account, id: accountKeyId, key: serviceKey } = await keyOf(org, 'admin');
      const personal = await personalKey(org.admin);
      for (const key of [serviceKey, personal.key]) {
        for (const [what, res] of [
          ['GET /api/auth/me', await get(key, '/api/auth/me')],
          ['POST /api/auth/me/api-keys', await post(key, '/api/auth/me/api-keys', { name: 'more' })],
          ['GET /api/auth/me/api-keys', await get(key, '/api/auth/me/api-keys')],
          ['rotate personal', await post(key, `/api/auth/me/api-keys/${personal.id}/rotate`, { graceSeconds: 0 })],
          ['DELETE personal', await del(key, `/api/auth/me/api-keys/${personal.id}`)],
          ['password', await patch(key, '/api/auth/me/password', { currentPassword: PASSWORD, newPassword: 'a brand new password' })],
          ['logout', await post(key, '/api/auth/logout', { refreshToken: org.admin.refreshToken })],
          ['POST account keys', await post(key, `/api/service-accounts/${account.id}/api-keys`, { name: 'more' })],
          ['GET account keys', await get(key, `/api/service-accounts/${account.id}/api-keys`)],
          [
            'rotate account key',
            await post(key, `/api/service-accounts/${account.id}/api-keys/${accountKeyId}/rotate`, { graceSeconds: 0 }),
          ],
          ['DELETE account key', await del(key, `/api/service-accounts/${account.id}/api-keys/${accountKeyId}`)],
        ] as const) {
          expect({ what, status: res.status, code: res.body?.error?.code }).toEqual({ what, status: 403, code: 'FORBIDDEN' });
        }
      }
      // Nothing changed: both keys work, no key was added, the session is still there.
      expect((await get(serviceKey, '/api/agents')).status).toBe(200);
      expect((await get(personal.key, '/api/agents')).status).toBe(200);
      expect((await get(org.admin, '/api/auth/me/api-keys')).body.data).toHaveLength(1);
      expect((await get(org.admin, `/api/service-accounts/${account.id}/api-keys`)).body.data).toHaveLength(1);
      expect((await t.http().post('/api/auth/refresh').send({ refreshToken: org.admin.refreshToken })).status).toBe(200);
      expect((await get(org.admin, '/api/auth/me')).status).toBe(200);
    });
  });

  describe('what a key never does: passwords, roles, new users (issue 24)', () => {
    const SET_PASSWORD = {
      error: { code: 'FORBIDDEN', message: 'Only a signed-in user may set a password; API keys cannot', status: 403 },
    };
    const CHANGE_ROLE = {
      error: { code: 'FORBIDDEN', message: "Only a signed-in user may change a user's role; API keys cannot", status: 403 },
    };
    const NEW_PASSWORD = 'taken over by a key';
    let org: TestOrg;
    let keys: Array<[string, string]>;
    beforeAll(async () => {
      org = await t.newOrg('team');
      keys = [
        ['users:write key', (await keyOf(org, 'admin', { scopes: ['users:read', 'users:write'] })).key],
        ['unscoped admin key', (await keyOf(org, 'admin')).key],
        ["admin's personal key", (await personalKey(org.admin)).key],
      ];
    });

    const login = (email: string, password: string) => t.http().post('/api/auth/login').send({ email, password });

    it("refuses to set a user's password (403), so no key can sign in as the user; the password stays", async () => {
      const admin = await t.addUser(org.id, 'admin');
      for (const [what, key] of keys) {
        for (const target of [admin, org.member]) {
          const res = await patch(key, `/api/users/${target.id}`, { password: NEW_PASSWORD });
          expect({ what, status: res.status, body: res.body as unknown }).toEqual({ what, status: 403, body: SET_PASSWORD });
        }
        const withDisabled = await patch(key, `/api/users/${org.member.id}`, { disabled: false, password: NEW_PASSWORD });
        expect({ what, status: withDisabled.status, body: withDisabled.body as unknown }).toEqual({
          what,
          status: 403,
          body: SET_PASSWORD,
        });
      }
      const taken = await login(admin.email, NEW_PASSWORD);
      expect({ status: taken.status, code: taken.body.error?.code }).toEqual({ status: 401, code: 'INVALID_CREDENTIALS' });
      expect((await login(admin.email, PASSWORD)).status).toBe(200);
      // The admin's sessions were not ended either.
      expect((await get(admin, '/api/auth/me')).status).toBe(200);
      // A signed-in admin still may.
      expect((await patch(org.admin, `/api/users/${admin.id}`, { password: 'set by a signed-in admin' })).status).toBe(200);
      expect((await login(admin.email, 'set by a signed-in admin')).status).toBe(200);
    });

    it("refuses to change a user's role (403); the same role, disabling, reading and deleting stay open to keys", async () => {
      const user = await t.addUser(org.id, 'viewer');
      for (const [what, key] of keys) {
        for (const role of ['admin', 'member']) {
          const res = await patch(key, `/api/users/${user.id}`, { role });
          expect({ what, role, status: res.status, body: res.body as unknown }).toEqual({ what, role, status: 403, body: CHANGE_ROLE });
        }
        const same = await patch(key, `/api/users/${user.id}`, { role: 'viewer' });
        expect({ what, status: same.status, role: same.body.role }).toEqual({ what, status: 200, role: 'viewer' });
      }
      expect((await get(org.admin, `/api/users/${user.id}`)).body.role).toBe('viewer');
      const [, key] = keys[0];
      const disabled = await patch(key, `/api/users/${user.id}`, { disabled: true });
      expect({ status: disabled.status, disabled: disabled.body.disabled }).toEqual({ status: 200, disabled: true });
      expect((await get(key, `/api/users/${user.id}`)).body.disabled).toBe(true);
      expect((await get(key, '/api/users')).status).toBe(200);
      expect((await del(key, `/api/users/${user.id}`)).status).toBe(204);
      expect((await get(org.admin, `/api/users/${user.id}`)).status).toBe(404);
      // A signed-in admin still may change a role.
      const member = await t.addUser(org.id, 'member');
      expect((await patch(org.admin, `/api/users/${member.id}`, { role: 'admin' })).body.role).toBe('admin');
    });

    it('refuses to create a user (the body always sets a password), and creates none', async () => {
      for (const [what, key] of keys) {
        const email = `by-key-${randomUUID().slice(0, 8)}@test.example`;
        const res = await post(key, '/api/users', { email, password: NEW_PASSWORD, role: 'admin' });
        expect({ what, status: res.status, body: res.body as unknown }).toEqual({ what, status: 403, body: SET_PASSWORD });
        const users = await get(org.admin, '/api/users?limit=100');
        expect(users.body.data.map((u: { email: string }) => u.email)).not.toContain(email);
        expect((await login(email, NEW_PASSWORD)).status).toBe(401);
      }
      const byAdmin = await post(org.admin, '/api/users', {
        email: `by-admin-${randomUUID().slice(0, 8)}@test.example`,
        password: NEW_PASSWORD,
        role: 'viewer',
      });
      expect(byAdmin.status).toBe(201);
    });
  });

  describe('triggeredBy', () => {
    let org: TestOrg;
    let agentId: string;
    let workflowId: string;
    beforeAll(async () => {
      org = await t.newOrg('team');
      await install(t, org, 'transform');
      agentId = await registerAgent(t, org, { name: 'upper', ...UPPERCASE });
      const workflow = await post(org.admin, '/api/workflows', {
        name: 'wf',
        steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }],
      });
      expect(workflow.status).toBe(201);
      workflowId = workflow.body.id as string;
    });

    it('records the key and its service account on an execution and a run', async () => {
      const { account, id, key } = await keyOf(org, 'member');
      const expected = { type: 'api_key', id, serviceAccountId: account.id };

      const executed = await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'a' } });
      expect(executed.status).toBe(200);
      expect(executed.body.triggeredBy).toStrictEqual(expected);
      const stored = await get(org.viewer, `/api/agents/${agentId}/history/${executed.body.id}`);
      expect(stored.body.triggeredBy).toStrictEqual(expected);

      const ran = await post(key, `/api/workflows/${workflowId}/run`, { input: { x: 1 } });
      expect(ran.status).toBe(200);
      expect(ran.body.triggeredBy).toStrictEqual(expected);
      expect((await get(org.viewer, `/api/workflows/${workflowId}/runs/${ran.body.id}`)).body.triggeredBy).toStrictEqual(expected);
    });

    it('records a personal key without serviceAccountId, and a JWT as the user', async () => {
      const { id, key } = await personalKey(org.member);
      const executed = await post(key, `/api/agents/${agentId}/execute`, { input: { text: 'a' } });
      expect(executed.status).toBe(200);
      expect(executed.body.triggeredBy).toStrictEqual({ type: 'api_key', id, person: org.member.id });
      expect((await get(org.viewer, `/api/agents/${agentId}/history/${executed.body.id}`)).body.triggeredBy).toStrictEqual({
        type: 'api_key',
        id,
        person: org.member.id,
      });
      const ran = await post(key, `/api/workflows/${workflowId}/run`, { input: {} });
      expect(ran.body.triggeredBy).toStrictEqual({ type: 'api_key', id, person: org.member.id });

      const withJwt = await post(org.member, `/api/agents/${agentId}/execute`, { input: { text: 'a' } });
      expect(withJwt.body.triggeredBy).toStrictEqual({ type: 'user', id: org.member.id });
      const runWithJwt = await post(org.member, `/api/workflows/${workflowId}/run`, { input: {} });
      expect(runWithJwt.body.triggeredBy).toStrictEqual({ type: 'user', id: org.member.id });
    });
  });

  describe('audit events', () => {
    let org: TestOrg;
    beforeAll(async () => {
      org = await t.newOrg('team');
    });

    const expectEvents = (res: Response, events: Array<{ type: string; actor: string }>) => {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: events.map(({ type, actor }) => ({ type, actor: { type: 'user', id: actor }, at: expect.any(String) })),
      });
      const times = (res.body.data as Array<{ at: string }>).map((e) => Date.parse(e.at));
      for (const time of times) expect(Number.isNaN(time)).toBe(false);
      expect([...times].sort((x, y) => x - y)).toEqual(times);
    };

    it('shows created, rotated and revoked with actor and time, oldest first', async () => {
      const account = await serviceAccount(org);
      const before = Date.now();
      const key = await accountKey(org, account.id);
      expectEvents(await get(org.admin, `/api/api-keys/${key.id}/events`), [{ type: 'created', actor: org.admin.id }]);

      const otherAdmin = await t.addUser(org.id, 'admin');
      expect((await post(otherAdmin, `/api/service-accounts/${account.id}/api-keys/${key.id}/rotate`, { graceSeconds: 0 })).status).toBe(
        200,
      );
      expect((await del(org.admin, `/api/service-accounts/${account.id}/api-keys/${key.id}`)).status).toBe(204);
      const events = await get(otherAdmin, `/api/api-keys/${key.id}/events`);
      expectEvents(events, [
        { type: 'created', actor: org.admin.id },
        { type: 'rotated', actor: otherAdmin.id },
        { type: 'revoked', actor: org.admin.id },
      ]);
      for (const event of events.body.data as Array<{ at: string }>) {
        expect(Date.parse(event.at)).toBeGreaterThanOrEqual(before - 1000);
        expect(Date.parse(event.at)).toBeLessThanOrEqual(Date.now() + 1000);
      }
      for (const form of secretFormsOf(key.key)) expect(JSON.stringify(events.body)).not.toContain(form);
    });

    it("lets a user read only their own personal keys' events; admins read every key's", async () => {
      const notFound = new NotFounds();
      const account = await serviceAccount(org);
      const accountKeyBody = await accountKey(org, account.id);
      const memberKey = await personalKey(org.member);
      const adminKey = await personalKey(org.admin);
      const viewerKey = await personalKey(org.viewer);
      expect((await del(org.member, `/api/auth/me/api-keys/${memberKey.id}`)).status).toBe(204);

      expectEvents(await get(org.member, `/api/api-keys/${memberKey.id}/events`), [
        { type: 'created', actor: org.member.id },
        { type: 'revoked', actor: org.member.id },
      ]);
      expectEvents(await get(org.viewer, `/api/api-keys/${viewerKey.id}/events`), [{ type: 'created', actor: org.viewer.id }]);
      for (const id of [adminKey.id, accountKeyBody.id, viewerKey.id]) {
        notFound.check(await get(org.member, `/api/api-keys/${id}/events`), 'API_KEY_NOT_FOUND');
      }
      notFound.check(await get(org.viewer, `/api/api-keys/${memberKey.id}/events`), 'API_KEY_NOT_FOUND');
      expectEvents(await get(org.admin, `/api/api-keys/${memberKey.id}/events`), [
        { type: 'created', actor: org.member.id },
        { type: 'revoked', actor: org.member.id },
      ]);
      expect((await get(org.admin, `/api/api-keys/${accountKeyBody.id}/events`)).status).toBe(200);

      const stranger = await t.newOrg('team');
      notFound.check(await get(stranger.admin, `/api/api-keys/${accountKeyBody.id}/events`), 'API_KEY_NOT_FOUND');
      notFound.check(await get(stranger.admin, `/api/api-keys/${memberKey.id}/events`), 'API_KEY_NOT_FOUND');
      notFound.check(await get(org.admin, `/api/api-keys/${randomUUID()}/events`), 'API_KEY_NOT_FOUND');
      notFound.expectSomeChecked();
    });
  });

  describe('limits and validation', () => {
    it('refuses the 21st unrevoked key of an owner with 409 API_KEY_LIMIT_REACHED; a revoke frees a place', async () => {
      const org = await t.newOrg('team');
      const account = await serviceAccount(org);
      const made: KeyBody[] = [];
      for (let i = 0; i < 20; i++) made.push(await accountKey(org, account.id, { name: `k${i}` }));
      const path = `/api/service-accounts/${account.id}/api-keys`;
      expectError(await post(org.admin, path, { name: 'k20' }), 409, 'API_KEY_LIMIT_REACHED');
      // Per owner: another account and a person still get keys.
      await accountKey(org, (await serviceAccount(org)).id);
      await personalKey(org.member);
      expect((await del(org.admin, `${path}/${made[0].id}`)).status).toBe(204);
      expect((await post(org.admin, path, { name: 'k20' })).status).toBe(201);
      expectError(await post(org.admin, path, { name: 'k21' }), 409, 'API_KEY_LIMIT_REACHED');

      for (let i = 1; i < 20; i++) await personalKey(org.member, { name: `p${i}` });
      expectError(await post(org.member, '/api/auth/me/api-keys', { name: 'p20' }), 409, 'API_KEY_LIMIT_REACHED');
    });

    it('refuses a bad key body with 400 naming the field, and creates nothing', async () => {
      const org = await t.newOrg('team');
      const account = await serviceAccount(org);
      const path = `/api/service-accounts/${account.id}/api-keys`;
      for (const [body, field] of [
        [{ name: 'x', scopes: ['agents:fly'] }, 'scopes'],
        [{ name: 'x', scopes: ['agents:read', 'everything'] }, 'scopes'],
        [{ name: 'x', scopes: [] }, 'scopes'],
        [{ name: 'x', scopes: 'agents:read' }, 'scopes'],
        [{ name: '' }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{}, 'name'],
        [{ name: 'x', key: 'plat_sa_mine' }, 'key'],
        [{ name: 'x', owner: { type: 'user', id: org.admin.id } }, 'owner'],
      ] as const) {
        expectError(await post(org.admin, path, body), 400, 'VALIDATION_FAILED', field);
        expectError(await post(org.member, '/api/auth/me/api-keys', body), 400, 'VALIDATION_FAILED', field);
      }
      expect((await get(org.admin, path)).body.data).toEqual([]);
      expect((await get(org.member, '/api/auth/me/api-keys')).body.data).toEqual([]);
      expect((await accountKey(org, account.id, { name: 'x'.repeat(100), scopes: ['agents:read'] })).name).toHaveLength(100);
    });

    it("counts requests with a key against the organization's rate limit like any other", async () => {
      const org = await t.newOrg('enterprise');
      const { key } = await keyOf(org, 'viewer');
      // Three requests so far in this window (account, key, this PATCH).
      expect((await patch(org.admin, '/api/subscription', { rateLimitPerMinute: 10 })).status).toBe(200);
      const responses = await burst(() => get(key, '/api/agents'), 7, 1);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
      expect(responses[0].headers['ratelimit-policy']).toBe('"enterprise";q=10;w=60');
      expectError(await get(key, '/api/agents'), 429, 'RATE_LIMIT_EXCEEDED');
      expectError(await get(org.viewer, '/api/agents'), 429, 'RATE_LIMIT_EXCEEDED');
    });
  });
});

describe('failed API-key authentications, limited per client address (issue 24)', () => {
  let t: TestApp;
  const WINDOW_SECONDS = 5;
  beforeAll(async () => {
    // Addresses told apart through X-Forwarded-For; 5 failures an address in a 5-second window.
    t = await createTestApp({
      env: { TRUST_PROXY: '1', LOGIN_LIMIT_PER_IP: '5', LOGIN_LIMIT_WINDOW_SECONDS: String(WINDOW_SECONDS) },
    });
  });
  afterAll(() => t.close());

  const from = (address: string, key: string) => t.http().get('/api/agents').set('X-Forwarded-For', address).set(withKey(key));
  const forged = (i: number) => forgeKey(i % 2 ? 'plat_pk_' : 'plat_sa_');

  it('answers 429 with Retry-After past LOGIN_LIMIT_PER_IP refused keys from one address, without reading more keys; others are not held back', async () => {
    const org = await t.newOrg('team');
    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'ci', role: 'member' });
    expect(account.status).toBe(201);
    const created = await t
      .http()
      .post(`/api/service-accounts/${account.body.id as string}/api-keys`)
      .set(bearer(org.admin))
      .send({ name: 'deploy' });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const attacker = '203.0.113.66';
    const lookups = jest.spyOn(t.app.get(ApiKeyRepository, { strict: false }), 'findByHash');
    try {
      const refused: number[] = [];
      for (let i = 0; i < 5; i++) refused.push((await from(attacker, forged(i))).status);
      expect(refused).toEqual([401, 401, 401, 401, 401]);
      const over = await from(attacker, forged(5));
      expect({ status: over.status, body: over.body as unknown }).toEqual({
        status: 429,
        body: { error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String), status: 429 } },
      });
      const retryAfter = Number(over.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
      expect(lookups).toHaveBeenCalledTimes(6);

      // From then on until the window ends: 429 at once, without a database read.
      for (let i = 0; i < 20; i++) expect((await from(attacker, forged(i))).status).toBe(429);
      expect(lookups).toHaveBeenCalledTimes(6);
    } finally {
      lookups.mockRestore();
    }
    // Other addresses are not held back: a valid key works, a forged one is a plain 401.
    expect((await from('198.51.100.7', key)).status).toBe(200);
    expect((await from('198.51.100.8', forged(0))).status).toBe(401);
    // Nor is a signed-in user at the limited address: only keys are counted there.
    expect((await t.http().get('/api/agents').set('X-Forwarded-For', attacker).set(bearer(org.member))).status).toBe(200);

    // Like a right password at a limited login, a valid key the instance must read waits for the window to end, then works.
    // The key is trusted for a moment after the instance read it (above, from another address): until
    // then it answers without a read, and 200. Once it must be read again, the limited address gets 429.
    const trusted: number[] = [];
    const mustRead = await eventually(
      async () => {
        const res = await from(attacker, key);
        if (res.status === 429) return res;
        trusted.push(res.status);
        return undefined;
      },
      { timeoutMs: 2000, intervalMs: 50, message: () => `the key to be read again at the limited address (answers ${trusted.join(', ')})` },
    );
    expect(trusted.filter((status) => status !== 200)).toEqual([]);
    expect(mustRead.status).toBe(429);
    await eventually(async () => (await from(attacker, key)).status === 200, {
      timeoutMs: (WINDOW_SECONDS + 2) * 1000,
      intervalMs: 250,
      message: 'the valid key to work again at the limited address once the window ended',
    });
    expect((await from(attacker, forged(0))).status).toBe(401);
  });
});
