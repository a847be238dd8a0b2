import { AUDIT_ACTIONS } from '../src/shared/audit/audit-trail';
import { randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { DataSource } from 'typeorm';
import { ENDPOINT_LIMITS } from '../src/modules/webhooks/domain/endpoint';
import { EVENT_TYPES } from '../src/modules/webhooks/domain/event-types';
import { EndpointRepository } from '../src/modules/webhooks/domain/webhook.repository';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';
import { expectError } from './support/envelope';

const SECRET = /^whsec_[A-Za-z0-9+/]+=*$/;
const HOOK = 'http://127.0.0.1:9/hooks/platform';
const ENDPOINT_KEYS = ['createdAt', 'description', 'disabledReason', 'enabled', 'eventTypes', 'id', 'updatedAt', 'url'];

/** The one error envelope, with `details` naming `path` when one is given. */

describe('webhooks API', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [org, other] = [await t.newOrg('team'), await t.newOrg('team')];
  });
  afterAll(() => t.close());

  const as = (user: TestUser) => ({
    create: (body: object) => t.http().post('/api/webhooks').set(bearer(user)).send(body),
    list: (query = '') => t.http().get(`/api/webhooks${query}`).set(bearer(user)),
    get: (id: string) => t.http().get(`/api/webhooks/${id}`).set(bearer(user)),
    patch: (id: string, body: object) => t.http().patch(`/api/webhooks/${id}`).set(bearer(user)).send(body),
    delete: (id: string) => t.http().delete(`/api/webhooks/${id}`).set(bearer(user)),
    rotate: (id: string, body: object = {}) => t.http().post(`/api/webhooks/${id}/rotate-secret`).set(bearer(user)).send(body),
    eventTypes: () => t.http().get('/api/webhook-event-types').set(bearer(user)),
  });
  const created = async (owner: TestOrg, body: object = {}) => {
    const res = await as(owner.admin).create({ url: HOOK, eventTypes: ['agent.execution.failed'], ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string } & Record<string, unknown>;
  };

  describe('create', () => {
    it('answers 201 with the endpoint, a Location and its signing secret, shown this once', async () => {
      const res = await as(org.admin).create({ url: HOOK, description: 'ops', eventTypes: ['agent.execution.failed', 'plugin.installed'] });
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe(`/api/webhooks/${res.body.id}`);
      expect(res.body).toEqual({
        id: expect.any(String),
        url: HOOK,
        description: 'ops',
        eventTypes: ['agent.execution.failed', 'plugin.installed'],
        enabled: true,
        disabledReason: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        secret: expect.stringMatching(SECRET),
      });
      const secret = res.body.secret as string;
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);

      const { secret: _shown, ...endpoint } = res.body as Record<string, unknown>;
      const got = await as(org.viewer).get(res.body.id as string);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(endpoint);
      const later = [
        got,
        await as(org.member).list(),
        await as(org.admin).patch(res.body.id as string, { description: 'ops team' }),
        await as(org.admin).rotate(res.body.id as string, { graceSeconds: 60 }),
        await as(org.admin).get(res.body.id as string),
        await as(org.admin).list('?limit=100'),
      ];
      for (const answer of later) {
        expect(answer.status).toBe(200);
        expect(JSON.stringify(answer.body)).not.toContain(secret);
        expect(JSON.stringify(answer.body)).not.toContain(secret.slice('whsec_'.length));
      }

      // Stored sealed, never as written.
      const rows: unknown[] = await t.app.get(DataSource).query('SELECT * FROM webhook_endpoints WHERE id = $1', [res.body.id]);
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(secret.slice('whsec_'.length));
    });

    it('accepts a prefix wildcard and defaults description to null', async () => {
      const body = await created(org, { eventTypes: ['workflow.run.*', 'workflow.run.*', 'agent.execution.failed'] });
      expect(body).toMatchObject({ description: null, eventTypes: ['workflow.run.*', 'agent.execution.failed'], enabled: true });
      expect((await created(org, { eventTypes: ['*'], enabled: false })).enabled).toBe(false);
    });

    it.each([
      ['an unknown type', ['agent.execution.failed', 'agent.exploded']],
      ['a wildcard matching nothing', ['nothing.*']],
      ['none', []],
      ['a number', [42]],
      ['a string, not a list', 'agent.execution.failed'],
      ['too many', Array.from({ length: ENDPOINT_LIMITS.eventTypes + 1 }, () => 'plugin.installed')],
    ])('refuses event types (%s) with 400 naming eventTypes', async (_case, eventTypes) => {
      expectError(await as(org.admin).create({ url: HOOK, eventTypes }), 400, 'VALIDATION_FAILED', 'eventTypes');
    });

    it('refuses a bad body with 400 naming the field', async () => {
      const base = { url: HOOK, eventTypes: ['plugin.installed'] };
      expectError(await as(org.admin).create({ eventTypes: ['plugin.installed'] }), 400, 'VALIDATION_FAILED', 'url');
      expectError(await as(org.admin).create({ ...base, url: 42 }), 400, 'VALIDATION_FAILED', 'url');
      const long = `http://127.0.0.1/${'a'.repeat(ENDPOINT_LIMITS.urlLength)}`;
      expectError(await as(org.admin).create({ ...base, url: long }), 400, 'VALIDATION_FAILED', 'url');
      expectError(await as(org.admin).create({ ...base, description: 'x'.repeat(501) }), 400, 'VALIDATION_FAILED', 'description');
      expectError(await as(org.admin).create({ ...base, enabled: null }), 400, 'VALIDATION_FAILED', 'enabled');
      expectError(await as(org.admin).create({ ...base, secret: 'whsec_mine' }), 400, 'VALIDATION_FAILED', 'secret');
      expect((await as(org.admin).create({ ...base, description: 'x'.repeat(500) })).status).toBe(201);
    });
  });

  describe('the SSRF guard', () => {
    let own: TestOrg;
    beforeAll(async () => {
      own = await t.newOrg('team');
    });

    it.each([
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/hook',
      'http://[::1]/hook',
      'http://localhost.invalid./hook',
      'ftp://127.0.0.1/hook',
      'http://user:pw@127.0.0.1/hook',
      'not a url',
    ])('refuses %s with 400 naming url, and saves nothing', async (url) => {
      const res = await as(own.admin).create({ url, eventTypes: ['plugin.installed'] });
      expectError(res, 400, 'VALIDATION_FAILED', 'url');
      expect(JSON.stringify(res.body)).not.toContain('pw@');
      expect((await as(own.admin).list()).body).toEqual({ data: [], nextCursor: null });
    });

    it('accepts loopback when it is allow-listed', async () => {
      expect((await as(own.admin).create({ url: 'https://127.0.0.1:8443/in?x=1', eventTypes: ['plugin.installed'] })).status).toBe(201);
    });

    it('checks a changed url again on PATCH; a refused change changes nothing', async () => {
      const { id } = await created(own);
      for (const url of ['http://10.0.0.1/hook', 'http://169.254.169.254/', 'ftp://127.0.0.1/', 'http://a:b@127.0.0.1/']) {
        expectError(await as(own.admin).patch(id, { url, description: 'changed' }), 400, 'VALIDATION_FAILED', 'url');
      }
      expect((await as(own.admin).get(id)).body).toMatchObject({ url: HOOK, description: null });
      const moved = await as(own.admin).patch(id, { url: 'http://127.0.0.1:10/elsewhere' });
      expect(moved.status).toBe(200);
      expect(moved.body.url).toBe('http://127.0.0.1:10/elsewhere');
    });
  });

  describe('the Team tier', () => {
    it('is needed for every route, reads too: Starter gets 403 FEATURE_NOT_AVAILABLE', async () => {
      const starter = await t.newOrg('starter');
      const id = randomUUID();
      const api = as(starter.admin);
      for (const res of [
        await api.create({ url: HOOK, eventTypes: ['plugin.installed'] }),
        await api.list(),
        await api.get(id),
        await api.patch(id, { enabled: false }),
        await api.delete(id),
        await api.rotate(id, { graceSeconds: 0 }),
        await api.eventTypes(),
        await as(starter.viewer).list(),
      ]) {
        expectError(res, 403, 'FEATURE_NOT_AVAILABLE');
      }
    });
  });

  describe('roles', () => {
    it('lets viewers and members read, not write', async () => {
      const { id } = await created(org);
      for (const user of [org.viewer, org.member]) {
        const api = as(user);
        expectError(await api.create({ url: HOOK, eventTypes: ['plugin.installed'] }), 403, 'FORBIDDEN');
        expectError(await api.patch(id, { enabled: false }), 403, 'FORBIDDEN');
        expectError(await api.delete(id), 403, 'FORBIDDEN');
        expectError(await api.rotate(id, { graceSeconds: 0 }), 403, 'FORBIDDEN');
        expect((await api.get(id)).status).toBe(200);
        expect((await api.list()).status).toBe(200);
        expect((await api.eventTypes()).status).toBe(200);
      }
      expect((await as(org.admin).get(id)).body.enabled).toBe(true);
    });

    it('needs a token', async () => {
      expectError(await t.http().get('/api/webhooks'), 401, 'UNAUTHORIZED');
      expectError(await t.http().get('/api/webhook-event-types'), 401, 'UNAUTHORIZED');
    });
  });

  describe('tenant isolation', () => {
    it("answers 404 WEBHOOK_NOT_FOUND for another organization's endpoint, and changes nothing", async () => {
      const { id } = await created(org, { description: 'mine' });
      const api = as(other.admin);
      expectError(await api.get(id), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await api.patch(id, { description: 'theirs' }), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await api.rotate(id, { graceSeconds: 0 }), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await api.delete(id), 404, 'WEBHOOK_NOT_FOUND');
      expect((await api.list('?limit=100')).body.data.map((e: { id: string }) => e.id)).not.toContain(id);
      expect((await as(org.admin).get(id)).body.description).toBe('mine');
    });

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      expectError(await as(org.admin).get(randomUUID()), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await as(org.admin).get('nope'), 400, 'VALIDATION_FAILED', 'id');
    });
  });

  describe('limit', () => {
    it("refuses an endpoint beyond the organization's limit, even when the creates race; a delete frees a place", async () => {
      const own = await t.newOrg('team');
      const attempts = await Promise.all(
        Array.from({ length: ENDPOINT_LIMITS.perOrganization + 3 }, () =>
          as(own.admin).create({ url: HOOK, eventTypes: ['plugin.installed'] }),
        ),
      );
      const made = attempts.filter((r) => r.status === 201);
      expect(made).toHaveLength(ENDPOINT_LIMITS.perOrganization);
      for (const refused of attempts.filter((r) => r.status !== 201)) expectError(refused, 409, 'WEBHOOK_LIMIT_REACHED');
      expect((await as(own.admin).delete(made[0].body.id as string)).status).toBe(204);
      expect((await as(own.admin).create({ url: HOOK, eventTypes: ['plugin.installed'] })).status).toBe(201);
    });
  });

  describe('list', () => {
    it('pages newest first with a cursor, never showing a secret', async () => {
      const own = await t.newOrg('team');
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await created(own, { description: `n${i}` }));
      // Newest first; ties on createdAt (same millisecond) go by id, as the keyset does.
      made.sort((a, b) => Date.parse(String(a.createdAt)) - Date.parse(String(b.createdAt)) || (a.id < b.id ? -1 : 1));
      const first = await as(own.viewer).list('?limit=2');
      expect(first.status).toBe(200);
      expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([made[4].id, made[3].id]);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      for (const endpoint of first.body.data) expect(Object.keys(endpoint).sort()).toEqual(ENDPOINT_KEYS);
      const second = await as(own.viewer).list(`?limit=2&cursor=${first.body.nextCursor}`);
      expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([made[2].id, made[1].id]);
      const last = await as(own.viewer).list(`?limit=2&cursor=${second.body.nextCursor}`);
      expect(last.body).toEqual({ data: [expect.objectContaining({ id: made[0].id })], nextCursor: null });
      const all = JSON.stringify([first.body, second.body, last.body]);
      for (const { secret } of made) expect(all).not.toContain(secret);
      expectError(await as(own.viewer).list('?cursor=garbage'), 400, 'VALIDATION_FAILED', 'cursor');
      expectError(await as(own.viewer).list('?limit=0'), 400, 'VALIDATION_FAILED', 'limit');
    });
  });

  describe('update and delete', () => {
    it('changes description, event types and enabled; checks event types', async () => {
      const { id, updatedAt } = await created(org, { description: 'before' });
      const res = await as(org.admin).patch(id, { description: null, eventTypes: ['workflow.run.*'], enabled: false });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, url: HOOK, description: null, eventTypes: ['workflow.run.*'], enabled: false });
      expect(res.body.updatedAt >= (updatedAt as string)).toBe(true);
      expect((await as(org.viewer).get(id)).body).toEqual(res.body);
      expectError(await as(org.admin).patch(id, { eventTypes: ['workflow.run.nope'] }), 400, 'VALIDATION_FAILED', 'eventTypes');
      expectError(await as(org.admin).patch(id, { eventTypes: [] }), 400, 'VALIDATION_FAILED', 'eventTypes');
      expectError(await as(org.admin).patch(id, { url: null }), 400, 'VALIDATION_FAILED', 'url');
      expectError(await as(org.admin).patch(id, { disabledReason: null }), 400, 'VALIDATION_FAILED', 'disabledReason');
      expect((await as(org.admin).patch(id, { enabled: true })).body).toMatchObject({ enabled: true, disabledReason: null });
    });

    it('deletes with 204; the endpoint is then gone', async () => {
      const { id } = await created(org);
      const res = await as(org.admin).delete(id);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectError(await as(org.admin).get(id), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await as(org.admin).delete(id), 404, 'WEBHOOK_NOT_FOUND');
    });
  });

  describe('rotate-secret', () => {
    const stored = (id: string) => t.run(() => t.app.get(EndpointRepository).find(org.id, id));

    it('answers a new secret; the old one keeps signing for the grace window only', async () => {
      const { id, secret: old } = await created(org);
      const before = Date.now();
      const res = await as(org.admin).rotate(id, { graceSeconds: 3600 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ secret: expect.stringMatching(SECRET), previousSecretExpiresAt: expect.any(String) });
      expect(res.body.secret).not.toBe(old);
      expect(JSON.stringify(res.body)).not.toContain(old);
      const expiresAt = Date.parse(res.body.previousSecretExpiresAt as string);
      expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);

      const endpoint = (await stored(id))!;
      expect(endpoint.signingSecrets(new Date())).toEqual([res.body.secret, old]);
      expect(endpoint.signingSecrets(new Date(expiresAt + 1))).toEqual([res.body.secret]);

      const again = await as(org.admin).rotate(id, { graceSeconds: 0 });
      expect(again.status).toBe(200);
      expect(again.body.secret).not.toBe(res.body.secret);
      expect((await stored(id))!.signingSecrets(new Date())).toEqual([again.body.secret]);
    });

    it('defaults the grace window to a day', async () => {
      const { id, secret: old } = await created(org);
      const res = await t.http().post(`/api/webhooks/${id}/rotate-secret`).set(bearer(org.admin));
      expect(res.status).toBe(200);
      expect(Date.parse(res.body.previousSecretExpiresAt as string) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
      expect((await stored(id))!.signingSecrets(new Date())).toEqual([res.body.secret, old]);
    });

    it.each([-1, ENDPOINT_LIMITS.graceSeconds.max + 1, 1.5, '60', null])('refuses graceSeconds %j with 400', async (graceSeconds) => {
      const { id, secret } = await created(org);
      expectError(await as(org.admin).rotate(id, { graceSeconds }), 400, 'VALIDATION_FAILED', 'graceSeconds');
      expect((await stored(id))!.signingSecrets(new Date())).toEqual([secret]);
    });

    it('accepts the largest grace window', async () => {
      const { id } = await created(org);
      expect((await as(org.admin).rotate(id, { graceSeconds: ENDPOINT_LIMITS.graceSeconds.max })).status).toBe(200);
    });
  });

  describe('event types', () => {
    it('lists every event type with its description, data schema and an example that fits the schema', async () => {
      const res = await as(org.viewer).eventTypes();
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['data']);
      const types = (res.body.data as Array<{ type: string }>).map((e) => e.type);
      expect(types).toEqual(EVENT_TYPES.map((e) => e.type));
      expect(new Set(types)).toEqual(
        new Set([
          'plugin.installed',
          'plugin.uninstalled',
          ...['succeeded', 'failed', 'timed_out', 'canceled'].flatMap((s) => [`agent.execution.${s}`, `workflow.run.${s}`]),
          'workflow.run.waiting',
          'workflow.schedule.skipped',
          'workflow.schedule.missed',
          'webhook.endpoint.disabled',
          'webhook.test',
          ...Object.keys(AUDIT_ACTIONS).map((action) => `audit.${action}`),
        ]),
      );
      const ajv = new Ajv({ strict: false, allErrors: true });
      addFormats(ajv);
      for (const entry of res.body.data as Array<Record<string, unknown>>) {
        expect(Object.keys(entry).sort()).toEqual(['description', 'example', 'schema', 'type']);
        expect(entry.description).toEqual(expect.any(String));
        expect(entry.schema).toEqual(expect.objectContaining({ type: expect.anything() }));
        expect(entry.example).toEqual(expect.any(Object));
        const validate = ajv.compile(entry.schema as object);
        expect({ type: entry.type, valid: validate(entry.example), errors: validate.errors ?? null }).toEqual({
          type: entry.type,
          valid: true,
          errors: null,
        });
      }
    });
  });
});
