import { randomBytes, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { expectError } from '../support/envelope';
import { bearer } from '../support/test-app';
import { isoString, PUBLIC_URL, SW_SECRET, Trigger, TRIGGER_KEYS, TriggerWithSecret, UUID, whsec, triggerSpec } from './support';

/**
 * Inbound webhook triggers (issue 17, part 2), written from the contract: the admin routes under
 * /api/workflows/:id/triggers, who may call them, what they refuse, the secret shown once. The
 * helpers the trigger specs share are in ./support.
 */
describe('inbound webhook triggers', () => {
  const a = triggerSpec();
  const { t, org, other } = a;
  const { path, doubling, echo, create, created, read, list, patch, remove, rotate, eventRes, replay, runsOf } = a;
  const { withBearer, withHub, accepted } = a;

  describe('create, read, change, delete', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await doubling();
    });

    it('creates a standard-webhooks trigger: 201, a Location, every field, the secret shown this once', async () => {
      const res = await create(workflowId, { name: 'Stripe', scheme: 'standard-webhooks', mapping: "{ 'n': body.amount }" });
      expect(res.status).toBe(201);
      const body = res.body as TriggerWithSecret;
      expect(res.headers.location).toBe(path(workflowId, body.id));
      expect(body).toEqual({
        id: expect.stringMatching(UUID),
        workflowId,
        name: 'Stripe',
        url: `${PUBLIC_URL}/api/hooks/${body.id}`,
        scheme: 'standard-webhooks',
        signatureHeader: null,
        signatureEncoding: null,
        signaturePrefix: null,
        dedupe: 'webhook-id',
        dedupeHeader: null,
        mapping: "{ 'n': body.amount }",
        responseMode: 'async',
        // "sync only; default 30": an async trigger may show the default or nothing.
        waitSeconds: body.waitSeconds === null ? null : 30,
        workflowVersion: null,
        enabled: true,
        createdAt: isoString,
        updatedAt: isoString,
        secret: expect.stringMatching(SW_SECRET),
      });
      expect(Buffer.from(body.secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);

      const { secret, ...shown } = body;
      const got = await read(workflowId, body.id);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(shown);
      const later = [
        got,
        await read(workflowId, body.id, org().admin),
        await list(workflowId, org().member),
        await patch(workflowId, body.id, { name: 'Stripe payments' }),
        await list(workflowId, org().admin, '?limit=100'),
      ];
      for (const answer of later) {
        expect(answer.status).toBe(200);
        expect(JSON.stringify(answer.body)).not.toContain(secret);
        expect(JSON.stringify(answer.body)).not.toContain(secret.slice('whsec_'.length));
      }
      for (const item of later[2].body.data as Trigger[]) expect(Object.keys(item).sort()).toEqual(TRIGGER_KEYS);
      expect(Object.keys(later[3].body as object).sort()).toEqual(TRIGGER_KEYS);

      // Stored sealed, never as written.
      const rows: unknown[] = await t().app.get(DataSource).query('SELECT * FROM workflow_triggers WHERE id = $1', [body.id]);
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(secret.slice('whsec_'.length));
    });

    it('creates an hmac-sha256 trigger with the GitHub defaults, deduped on its signature, and a generated secret', async () => {
      const body = await created(workflowId, { scheme: 'hmac-sha256' });
      expect(body).toMatchObject({
        name: null,
        scheme: 'hmac-sha256',
        signatureHeader: 'X-Hub-Signature-256',
        signatureEncoding: 'hex',
        signaturePrefix: 'sha256=',
        dedupe: 'signature',
        dedupeHeader: null,
        mapping: null,
        responseMode: 'async',
        workflowVersion: null,
        enabled: true,
      });
      expect(body.secret).toMatch(/^[\x20-\x7e]{16,256}$/);
      const { secret, ...shown } = body;
      const got = await read(workflowId, body.id);
      expect(got.body).toEqual(shown);
      expect(JSON.stringify(got.body)).not.toContain(secret);
    });

    it('takes every hmac-sha256 option and an own secret, and answers them as given', async () => {
      const own = 'my-own-shared-secret-0123456789';
      const body = await created(workflowId, {
        name: 'partner',
        scheme: 'hmac-sha256',
        signatureHeader: 'X-Signature',
        signatureEncoding: 'base64',
        signaturePrefix: '',
        secret: own,
        dedupe: 'header',
        dedupeHeader: 'X-Delivery',
        responseMode: 'sync',
        waitSeconds: 5,
        enabled: false,
      });
      expect(body).toMatchObject({
        name: 'partner',
        signatureHeader: 'X-Signature',
        signatureEncoding: 'base64',
        signaturePrefix: '',
        dedupe: 'header',
        dedupeHeader: 'X-Delivery',
        responseMode: 'sync',
        waitSeconds: 5,
        enabled: false,
        secret: own,
      });
      expect(JSON.stringify((await read(workflowId, body.id)).body)).not.toContain(own);
    });

    it('creates a bearer trigger: the secret is the token, no signature fields', async () => {
      const body = await created(workflowId, { scheme: 'bearer' });
      expect(body).toMatchObject({
        scheme: 'bearer',
        signatureHeader: null,
        signatureEncoding: null,
        signaturePrefix: null,
        dedupe: 'idempotency-key',
        dedupeHeader: null,
      });
      expect(body.secret).toEqual(expect.any(String));
      expect(body.secret.length).toBeGreaterThanOrEqual(16);
      expect(JSON.stringify((await read(workflowId, body.id)).body)).not.toContain(body.secret);
    });

    it('keeps an own standard-webhooks secret', async () => {
      const own = whsec(24);
      expect((await created(workflowId, { scheme: 'standard-webhooks', secret: own })).secret).toBe(own);
    });

    it('takes an own hmac-sha256 secret of any printable characters, spaces too, and verifies with it', async () => {
      // A secret a sender already has (GitHub takes any string): printable ASCII includes the space.
      const own = 'correct horse battery staple';
      const res = await create(workflowId, { scheme: 'hmac-sha256', secret: own, mapping: "{ 'n': body.n }" });
      expect({ status: res.status, secret: res.body.secret as unknown }).toEqual({ status: 201, secret: own });
      accepted(await withHub(res.body as Trigger, own, { n: 1 }), res.body as Trigger);
    });

    it('changes a trigger with PATCH; refuses scheme and secret and changes nothing then', async () => {
      const body = await created(workflowId, { scheme: 'hmac-sha256', name: 'before' });
      const { secret: _secret, ...shown } = body;
      await new Promise((resolve) => setTimeout(resolve, 20));
      const res = await patch(workflowId, body.id, {
        name: 'after',
        mapping: "{ 'n': body.count }",
        dedupe: 'header',
        dedupeHeader: 'X-GitHub-Delivery',
        signatureEncoding: 'base64',
        responseMode: 'sync',
        waitSeconds: 10,
        enabled: false,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...shown,
        name: 'after',
        mapping: "{ 'n': body.count }",
        dedupe: 'header',
        dedupeHeader: 'X-GitHub-Delivery',
        signatureEncoding: 'base64',
        responseMode: 'sync',
        waitSeconds: 10,
        enabled: false,
        updatedAt: isoString,
      });
      expect(Date.parse(res.body.updatedAt as string)).toBeGreaterThan(Date.parse(body.updatedAt));
      expect((await read(workflowId, body.id)).body).toEqual(res.body);

      // One field alone; the others stay. A null mapping: the input is the body again.
      const only = await patch(workflowId, body.id, { mapping: null });
      expect(only.status).toBe(200);
      expect(only.body).toEqual({ ...res.body, mapping: null, updatedAt: isoString });

      const now = (await read(workflowId, body.id)).body as Trigger;
      expectError(await patch(workflowId, body.id, { scheme: 'bearer' }), 400, 'VALIDATION_FAILED', 'scheme');
      expectError(await patch(workflowId, body.id, { secret: 'another secret 0123456789' }), 400, 'VALIDATION_FAILED', 'secret');
      expectError(await patch(workflowId, body.id, { mapping: "{ 'n': body.( }" }), 400, 'VALIDATION_FAILED', 'mapping');
      expectError(await patch(workflowId, body.id, { waitSeconds: 61 }), 400, 'VALIDATION_FAILED', 'waitSeconds');
      expectError(await patch(workflowId, body.id, { workflowVersion: 99 }), 400, 'VALIDATION_FAILED', 'workflowVersion');
      expect((await read(workflowId, body.id)).body).toEqual(now);
    });

    it('deletes a trigger: 204, then 404 TRIGGER_NOT_FOUND, on the admin routes and at its hook', async () => {
      const body = await created(workflowId, { scheme: 'bearer' });
      const res = await remove(workflowId, body.id);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectError(await read(workflowId, body.id), 404, 'TRIGGER_NOT_FOUND');
      expectError(await remove(workflowId, body.id), 404, 'TRIGGER_NOT_FOUND');
      expectError(await withBearer(body, { n: 1 }), 404, 'TRIGGER_NOT_FOUND');
      expect(((await list(workflowId, org().viewer, '?limit=100')).body.data as Trigger[]).map((x) => x.id)).not.toContain(body.id);
    });

    it('lists the triggers of a workflow newest first with a cursor, and only those', async () => {
      const own = await doubling();
      const elsewhere = await doubling();
      const made: TriggerWithSecret[] = [];
      for (const scheme of ['bearer', 'hmac-sha256', 'standard-webhooks']) made.push(await created(own, { scheme, name: scheme }));
      await created(elsewhere, { scheme: 'bearer' });
      // Newest first; ties on createdAt (same millisecond) go by id, as the keyset does.
      made.sort((x, y) => Date.parse(x.createdAt) - Date.parse(y.createdAt) || (x.id < y.id ? -1 : 1));
      const first = await list(own, org().viewer, '?limit=2');
      expect(first.status).toBe(200);
      expect((first.body.data as Trigger[]).map((x) => x.id)).toEqual([made[2].id, made[1].id]);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await list(own, org().viewer, `?limit=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ data: [expect.objectContaining({ id: made[0].id })], nextCursor: null });
      const all = await list(own, org().member);
      expect(all.body.nextCursor).toBeNull();
      for (const item of all.body.data as Trigger[]) {
        const { secret: _secret, ...expected } = made.find((m) => m.id === item.id)!;
        expect(item).toEqual(expected);
      }
      const shown = JSON.stringify([first.body, second.body, all.body]);
      for (const { secret } of made) expect(shown).not.toContain(secret);
    });

    it('allows at most 20 triggers per workflow: the 21st is 409 TRIGGER_LIMIT_REACHED; a delete frees a place', async () => {
      const full = await echo();
      const made: Trigger[] = [];
      for (let i = 0; i < 20; i++) made.push(await created(full, { scheme: 'bearer', name: `t${i}` }));
      expectError(await create(full, { scheme: 'bearer', name: 't20' }), 409, 'TRIGGER_LIMIT_REACHED');
      expect((await list(full, org().viewer, '?limit=100')).body.data).toHaveLength(20);
      expect((await remove(full, made[0].id)).status).toBe(204);
      expect((await create(full, { scheme: 'bearer' })).status).toBe(201);
    });

    it('holds the limit of 20 when the creates race', async () => {
      const full = await echo();
      const attempts = await Promise.all(Array.from({ length: 23 }, () => create(full, { scheme: 'bearer' })));
      expect(attempts.filter((r) => r.status === 201)).toHaveLength(20);
      for (const refused of attempts.filter((r) => r.status !== 201)) expectError(refused, 409, 'TRIGGER_LIMIT_REACHED');
      expect((await list(full, org().viewer, '?limit=100')).body.data).toHaveLength(20);
    });
  });

  describe('validation', () => {
    let workflowId: string;
    beforeAll(async () => {
      workflowId = await doubling();
    });

    it.each([
      ['no scheme', { name: 'x' }, 'scheme'],
      ['an unknown scheme', { scheme: 'basic' }, 'scheme'],
      ['dedupe header without dedupeHeader', { scheme: 'hmac-sha256', dedupe: 'header' }, 'dedupeHeader'],
      ['an unknown dedupe', { scheme: 'bearer', dedupe: 'body' }, 'dedupe'],
      ['a secret for bearer', { scheme: 'bearer', secret: 'a token I chose 0123456789' }, 'secret'],
      ['a standard-webhooks secret without whsec_', { scheme: 'standard-webhooks', secret: randomBytes(32).toString('base64') }, 'secret'],
      ['a standard-webhooks secret under 24 bytes', { scheme: 'standard-webhooks', secret: whsec(16) }, 'secret'],
      ['an hmac-sha256 secret of 15 characters', { scheme: 'hmac-sha256', secret: 'x'.repeat(15) }, 'secret'],
      ['an hmac-sha256 secret of 257 characters', { scheme: 'hmac-sha256', secret: 'x'.repeat(257) }, 'secret'],
      ['an hmac-sha256 secret with a control character', { scheme: 'hmac-sha256', secret: `${'x'.repeat(20)}\n` }, 'secret'],
      ['an hmac-sha256 secret of one character repeated', { scheme: 'hmac-sha256', secret: 'x'.repeat(64) }, 'secret'],
      ['an hmac-sha256 secret of two characters', { scheme: 'hmac-sha256', secret: '01'.repeat(20) }, 'secret'],
      ['an hmac-sha256 secret of 7 different characters', { scheme: 'hmac-sha256', secret: 'abcdefg'.repeat(6) }, 'secret'],
      [
        'a standard-webhooks secret of zero bytes',
        { scheme: 'standard-webhooks', secret: `whsec_${Buffer.alloc(32).toString('base64')}` },
        'secret',
      ],
      [
        'a standard-webhooks secret of one byte repeated',
        { scheme: 'standard-webhooks', secret: `whsec_${Buffer.alloc(32, 0xa5).toString('base64')}` },
        'secret',
      ],
      [
        'a standard-webhooks secret of 15 different bytes',
        { scheme: 'standard-webhooks', secret: `whsec_${Buffer.from([...Array(32).keys()].map((i) => i % 15)).toString('base64')}` },
        'secret',
      ],
      ['dedupe signature for bearer', { scheme: 'bearer', dedupe: 'signature' }, 'dedupe'],
      ['dedupe signature for standard-webhooks', { scheme: 'standard-webhooks', dedupe: 'signature' }, 'dedupe'],
      ['a mapping that is not JSONata', { scheme: 'bearer', mapping: "{ 'n': body.( }" }, 'mapping'],
      [
        'a mapping with a regex the linear-time engine cannot run',
        { scheme: 'bearer', mapping: '$contains(body.text, /^(a+)+(?=b)/)' },
        'mapping',
      ],
      ['a workflowVersion that does not exist', { scheme: 'bearer', workflowVersion: 99 }, 'workflowVersion'],
      ['a workflowVersion of 0', { scheme: 'bearer', workflowVersion: 0 }, 'workflowVersion'],
      ['a workflowVersion that is not a number', { scheme: 'bearer', workflowVersion: 'one' }, 'workflowVersion'],
      ['waitSeconds 0', { scheme: 'bearer', responseMode: 'sync', waitSeconds: 0 }, 'waitSeconds'],
      ['waitSeconds 61', { scheme: 'bearer', responseMode: 'sync', waitSeconds: 61 }, 'waitSeconds'],
      ['waitSeconds 1.5', { scheme: 'bearer', responseMode: 'sync', waitSeconds: 1.5 }, 'waitSeconds'],
      ['an unknown responseMode', { scheme: 'bearer', responseMode: 'stream' }, 'responseMode'],
      ['an unknown signatureEncoding', { scheme: 'hmac-sha256', signatureEncoding: 'hex32' }, 'signatureEncoding'],
      ['a name over 100 characters', { scheme: 'bearer', name: 'n'.repeat(101) }, 'name'],
      ['enabled not a boolean', { scheme: 'bearer', enabled: 'yes' }, 'enabled'],
    ])('refuses %s: 400 VALIDATION_FAILED naming the field, and saves nothing', async (_what, body, field) => {
      expectError(await create(workflowId, body), 400, 'VALIDATION_FAILED', field);
      expect((await list(workflowId)).body).toEqual({ data: [], nextCursor: null });
    });

    it('accepts the bounds: waitSeconds 1 and 60, a name of 100, hmac secrets of 16 and 256, 4 different characters in 16, the current version', async () => {
      const elsewhere = await doubling();
      for (const body of [
        { scheme: 'bearer', responseMode: 'sync', waitSeconds: 1 },
        { scheme: 'bearer', responseMode: 'sync', waitSeconds: 60 },
        { scheme: 'bearer', name: 'n'.repeat(100) },
        { scheme: 'hmac-sha256', secret: randomBytes(8).toString('hex') },
        { scheme: 'hmac-sha256', secret: randomBytes(192).toString('base64') },
        { scheme: 'hmac-sha256', secret: 'abcd'.repeat(4) },
        { scheme: 'bearer', workflowVersion: 1 },
      ]) {
        const res = await create(elsewhere, body);
        expect({ body, status: res.status }).toEqual({ body, status: 201 });
      }
    });

    it('answers 404 WORKFLOW_NOT_FOUND for a workflow that does not exist', async () => {
      expectError(await create(randomUUID(), { scheme: 'bearer' }), 404, 'WORKFLOW_NOT_FOUND');
      expectError(await list(randomUUID()), 404, 'WORKFLOW_NOT_FOUND');
    });
  });

  describe('access', () => {
    let workflowId: string;
    let trigger: TriggerWithSecret;
    let eventId: string;
    beforeAll(async () => {
      workflowId = await doubling();
      trigger = await created(workflowId, { scheme: 'bearer', name: 'guarded' });
      eventId = accepted(await withBearer(trigger, { n: 1 }), trigger).eventId;
    });

    it('lets every role read; members and viewers get 403 on every write; members may replay, viewers not', async () => {
      const before = (await read(workflowId, trigger.id)).body as Trigger;
      for (const user of [org().member, org().viewer]) {
        expectError(await create(workflowId, { scheme: 'bearer' }, user), 403, 'FORBIDDEN');
        expectError(await patch(workflowId, trigger.id, { name: 'theirs' }, user), 403, 'FORBIDDEN');
        expectError(await remove(workflowId, trigger.id, user), 403, 'FORBIDDEN');
        expectError(await rotate(workflowId, trigger.id, { graceSeconds: 0 }, user), 403, 'FORBIDDEN');
        expect((await list(workflowId, user)).status).toBe(200);
        expect((await read(workflowId, trigger.id, user)).status).toBe(200);
        expect((await a.eventsRes(trigger, user)).status).toBe(200);
        expect((await eventRes(trigger, eventId, user)).status).toBe(200);
      }
      expectError(await replay(trigger, eventId, org().viewer), 403, 'FORBIDDEN');
      expect((await read(workflowId, trigger.id)).body).toEqual(before);
      // The secret did not change: the sender's token still works.
      accepted(await withBearer(trigger, { n: 2 }), trigger);
      expect(await runsOf(workflowId)).toHaveLength(2);

      const replayed = await replay(trigger, eventId, org().member);
      expect(replayed.status).toBe(202);
      expect(await runsOf(workflowId)).toHaveLength(3);
    });

    it('needs a token on the admin routes', async () => {
      expectError(await t().http().get(path(workflowId)), 401, 'UNAUTHORIZED');
      expectError(await t().http().get(path(workflowId, trigger.id)), 401, 'UNAUTHORIZED');
      expectError(await t().http().post(path(workflowId)).send({ scheme: 'bearer' }), 401, 'UNAUTHORIZED');
      // The hook's own secret is no API credential.
      expectError(await t().http().get(path(workflowId)).set('Authorization', `Bearer ${trigger.secret}`), 401, 'UNAUTHORIZED');
    });

    it('asks API keys for workflows:read to read, workflows:write to write, workflows:run to replay', async () => {
      const account = await t().http().post('/api/service-accounts').set(bearer(org().admin)).send({ name: 'hooks', role: 'admin' });
      expect(account.status).toBe(201);
      const keyWith = async (scopes: string[]) => {
        const res = await t()
          .http()
          .post(`/api/service-accounts/${account.body.id as string}/api-keys`)
          .set(bearer(org().admin))
          .send({ name: scopes.join(' '), scopes });
        expect(res.status).toBe(201);
        return { Authorization: `Bearer ${res.body.key as string}` };
      };
      const reader = await keyWith(['workflows:read']);
      const writer = await keyWith(['workflows:read', 'workflows:write']);
      const runner = await keyWith(['workflows:run']);
      const refused = (res: Response, scope: string) => {
        expectError(res, 403, 'FORBIDDEN');
        expect(res.body.error.message).toContain(`'${scope}'`);
      };
      const http = () => t().http();

      expect((await http().get(path(workflowId)).set(reader)).status).toBe(200);
      expect((await http().get(path(workflowId, trigger.id)).set(reader)).status).toBe(200);
      expect(
        (
          await http()
            .get(path(workflowId, trigger.id, 'events'))
            .set(reader)
        ).status,
      ).toBe(200);
      expect(
        (
          await http()
            .get(path(workflowId, trigger.id, 'events', eventId))
            .set(reader)
        ).status,
      ).toBe(200);
      refused(await http().post(path(workflowId)).set(reader).send({ scheme: 'bearer' }), 'workflows:write');
      refused(await http().patch(path(workflowId, trigger.id)).set(reader).send({ name: 'x' }), 'workflows:write');
      refused(
        await http()
          .post(path(workflowId, trigger.id, 'rotate-secret'))
          .set(reader)
          .send({}),
        'workflows:write',
      );
      refused(await http().delete(path(workflowId, trigger.id)).set(reader), 'workflows:write');
      refused(
        await http()
          .post(path(workflowId, trigger.id, 'events', eventId, 'replay'))
          .set(writer),
        'workflows:run',
      );
      refused(await http().get(path(workflowId)).set(runner), 'workflows:read');

      const made = await http().post(path(workflowId)).set(writer).send({ scheme: 'hmac-sha256' });
      expect(made.status).toBe(201);
      expect(made.body.secret).toEqual(expect.any(String));
      expect(
        (
          await http()
            .patch(path(workflowId, made.body.id as string))
            .set(writer)
            .send({ name: 'by key' })
        ).status,
      ).toBe(200);
      expect(
        (
          await http()
            .post(path(workflowId, made.body.id as string, 'rotate-secret'))
            .set(writer)
            .send({})
        ).status,
      ).toBe(200);
      expect(
        (
          await http()
            .delete(path(workflowId, made.body.id as string))
            .set(writer)
        ).status,
      ).toBe(204);
      expect(
        (
          await http()
            .post(path(workflowId, trigger.id, 'events', eventId, 'replay'))
            .set(runner)
        ).status,
      ).toBe(202);
    });

    it("answers another organization's workflow, triggers and events as if they did not exist, and changes nothing", async () => {
      const as = other().admin;
      const http = () => t().http();
      const auth = bearer(as);
      const viaTheirWorkflow: Array<[string, () => Promise<Response>]> = [
        ['list', () => list(workflowId, as)],
        ['create', () => create(workflowId, { scheme: 'bearer' }, as)],
        ['get', () => read(workflowId, trigger.id, as)],
        ['patch', () => patch(workflowId, trigger.id, { name: 'theirs', enabled: false }, as)],
        ['delete', () => remove(workflowId, trigger.id, as)],
        ['rotate', () => rotate(workflowId, trigger.id, { graceSeconds: 0 }, as)],
        [
          'events',
          () =>
            http()
              .get(path(workflowId, trigger.id, 'events'))
              .set(auth),
        ],
        [
          'event',
          () =>
            http()
              .get(path(workflowId, trigger.id, 'events', eventId))
              .set(auth),
        ],
        [
          'replay',
          () =>
            http()
              .post(path(workflowId, trigger.id, 'events', eventId, 'replay'))
              .set(auth),
        ],
      ];
      for (const [what, call] of viaTheirWorkflow) {
        const res = await call();
        expect({ what, status: res.status, code: res.body?.error?.code as unknown }).toEqual({
          what,
          status: 404,
          code: 'WORKFLOW_NOT_FOUND',
        });
      }

      // Their own workflow, with our trigger's id: no such trigger.
      const theirs = await doubling(other());
      const theirTrigger = await created(theirs, { scheme: 'bearer' }, as);
      const viaOwnWorkflow: Array<[string, () => Promise<Response>, string]> = [
        ['get', () => read(theirs, trigger.id, as), 'TRIGGER_NOT_FOUND'],
        ['patch', () => patch(theirs, trigger.id, { name: 'theirs', enabled: false }, as), 'TRIGGER_NOT_FOUND'],
        ['delete', () => remove(theirs, trigger.id, as), 'TRIGGER_NOT_FOUND'],
        ['rotate', () => rotate(theirs, trigger.id, { graceSeconds: 0 }, as), 'TRIGGER_NOT_FOUND'],
        [
          'events',
          () =>
            http()
              .get(path(theirs, trigger.id, 'events'))
              .set(auth),
          'TRIGGER_NOT_FOUND',
        ],
        [
          'event',
          () =>
            http()
              .get(path(theirs, trigger.id, 'events', eventId))
              .set(auth),
          'TRIGGER_NOT_FOUND',
        ],
        [
          'replay',
          () =>
            http()
              .post(path(theirs, trigger.id, 'events', eventId, 'replay'))
              .set(auth),
          'TRIGGER_NOT_FOUND',
        ],
        // Their own trigger, with our event's id: no such event.
        [
          'event via their trigger',
          () =>
            http()
              .get(path(theirs, theirTrigger.id, 'events', eventId))
              .set(auth),
          'TRIGGER_EVENT_NOT_FOUND',
        ],
        [
          'replay via their trigger',
          () =>
            http()
              .post(path(theirs, theirTrigger.id, 'events', eventId, 'replay'))
              .set(auth),
          'TRIGGER_EVENT_NOT_FOUND',
        ],
      ];
      for (const [what, call, code] of viaOwnWorkflow) {
        const res = await call();
        expect({ what, status: res.status, code: res.body?.error?.code as unknown }).toEqual({ what, status: 404, code });
      }
      expect(((await list(theirs, as)).body.data as Trigger[]).map((x) => x.id)).toEqual([theirTrigger.id]);
      expect(await runsOf(theirs, other())).toEqual([]);

      // Ours is as it was: enabled, same name, its token still works, no run but ours.
      expect((await read(workflowId, trigger.id)).body).toMatchObject({ name: 'guarded', enabled: true });
      const runsBefore = (await runsOf(workflowId)).length;
      accepted(await withBearer(trigger, { n: 3 }), trigger);
      expect(await runsOf(workflowId)).toHaveLength(runsBefore + 1);
    });

    it('finds a trigger only under its own workflow and an event only under its own trigger; guessed ids find nothing', async () => {
      const sibling = await doubling();
      const siblingTrigger = await created(sibling, { scheme: 'bearer' });
      expectError(await read(sibling, trigger.id), 404, 'TRIGGER_NOT_FOUND');
      expectError(await patch(sibling, trigger.id, { name: 'moved' }), 404, 'TRIGGER_NOT_FOUND');
      expectError(await a.eventsRes({ ...trigger, workflowId: sibling }), 404, 'TRIGGER_NOT_FOUND');
      expectError(await eventRes(siblingTrigger, eventId), 404, 'TRIGGER_EVENT_NOT_FOUND');
      expectError(await replay(siblingTrigger, eventId), 404, 'TRIGGER_EVENT_NOT_FOUND');
      for (let i = 0; i < 5; i++) {
        expectError(await read(workflowId, randomUUID()), 404, 'TRIGGER_NOT_FOUND');
        expectError(await eventRes(trigger, randomUUID()), 404, 'TRIGGER_EVENT_NOT_FOUND');
        expectError(await replay(trigger, randomUUID()), 404, 'TRIGGER_EVENT_NOT_FOUND');
      }
      expect((await read(workflowId, trigger.id)).body).toMatchObject({ name: 'guarded' });
    });
  });
});
