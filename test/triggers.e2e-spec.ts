import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { install } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

/**
 * Inbound webhook triggers (issue 17, part 2), written from the contract: the admin routes under
 * /api/workflows/:id/triggers (who may call them, what they refuse, the secret shown once,
 * rotation, the event log and replay) and the public hook POST /api/hooks/:triggerId, driven
 * the way a sender would: Standard Webhooks signed with the reference `standardwebhooks`
 * library, GitHub's X-Hub-Signature-256, a bearer token. Every workflow here is a
 * transform.jsonata step, so runs finish fast and offline. The hook rate limits need apps of
 * their own (other HOOK_RATE_LIMIT_* settings): they are the last describes.
 */
const PUBLIC_URL = 'https://platform.test.example';
const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SW_SECRET = /^whsec_[A-Za-z0-9+/]+=*$/;
const LOOPBACK = /^(::ffff:127\.0\.0\.1|127\.0\.0\.1|::1)$/;
const MIB = 1024 * 1024;
const isoString = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

interface Trigger {
  id: string;
  workflowId: string;
  name: string | null;
  url: string;
  scheme: string;
  signatureHeader: string | null;
  signatureEncoding: string | null;
  signaturePrefix: string | null;
  dedupe: string;
  dedupeHeader: string | null;
  mapping: string | null;
  responseMode: string;
  waitSeconds: number | null;
  workflowVersion: number | null;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
  secret?: string;
}

/** A trigger as create and rotate-secret answer it: with its secret. */
type TriggerWithSecret = Trigger & { secret: string };

interface HookAnswer {
  eventId: string;
  runId: string;
  status: string;
  duplicate: boolean;
  output?: unknown;
  error?: unknown;
}

interface TriggerEvent {
  id: string;
  receivedAt: string;
  source: string;
  status: 'started' | 'refused';
  runId: string | null;
  dedupeKey: string | null;
  error: unknown;
  replayOf: string | null;
  headers?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
}

interface RunBody {
  id: string;
  workflowId: string;
  workflowVersion: number;
  status: string;
  input: unknown;
  output: unknown;
  error: unknown;
  triggeredBy: { type: string; id: string; eventId?: string };
}

const TRIGGER_KEYS = [
  'createdAt',
  'dedupe',
  'dedupeHeader',
  'enabled',
  'id',
  'mapping',
  'name',
  'responseMode',
  'scheme',
  'signatureEncoding',
  'signatureHeader',
  'signaturePrefix',
  'updatedAt',
  'url',
  'waitSeconds',
  'workflowId',
  'workflowVersion',
];
const EVENT_KEYS = ['dedupeKey', 'error', 'id', 'receivedAt', 'replayOf', 'runId', 'source', 'status'];

/** The one error envelope, exactly; with `path`, its details name that field. */
function expectError(res: Response, status: number, code: string, path?: string): void {
  expect({ status: res.status, code: res.body?.error?.code as unknown }).toEqual({ status, code });
  expect(res.body).toEqual({
    error: { code, message: expect.any(String), status, ...('details' in res.body.error ? { details: expect.any(Array) } : {}) },
  });
  if (path) expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
}

/** The Standard Webhooks headers a sender using the reference library writes. */
function standardSigned(secret: string, payload: string, options: { id?: string; at?: Date } = {}): Record<string, string> {
  const id = options.id ?? `msg_${randomUUID()}`;
  const at = options.at ?? new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, payload),
  };
}

const hmac = (secret: string, payload: string | Buffer) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(payload);
/** GitHub's X-Hub-Signature-256 value. */
const hubSignature = (secret: string, payload: string | Buffer) => `sha256=${hmac(secret, payload).digest('hex')}`;

/** A fresh Standard Webhooks secret of `bytes` random bytes. */
const whsec = (bytes = 32) => `whsec_${randomBytes(bytes).toString('base64')}`;

/** Everything the organization-facing parts of the spec share: one app, two organizations. */
function fixture(env: Record<string, string> = {}) {
  const state = {} as { t: TestApp; org: TestOrg; other: TestOrg };
  beforeAll(async () => {
    state.t = await createTestApp({ env: { PUBLIC_URL, ...env } });
    // Enterprise: these specs make more requests than the smaller tiers' per-minute budgets.
    [state.org, state.other] = [await state.t.newOrg('enterprise'), await state.t.newOrg('enterprise')];
    await install(state.t, state.org, 'transform');
    await install(state.t, state.other, 'transform');
  });
  afterAll(async () => {
    await state.t.close();
  });
  return state;
}

/** Requests and fixtures over one app; `owner` defaults to the first organization. */
function api(get: () => { t: TestApp; org: TestOrg }) {
  const t = () => get().t;
  const org = () => get().org;

  const path = (workflowId: string, triggerId?: string, ...rest: string[]) =>
    [`/api/workflows/${workflowId}/triggers`, ...(triggerId ? [triggerId] : []), ...rest].join('/');

  const define = async (owner: TestOrg, definition: Record<string, unknown>): Promise<string> => {
    const res = await t().http().post('/api/workflows').set(bearer(owner.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  /** A workflow multiplying `input.n` by `factor`, with an inputSchema requiring a number n. */
  const doubling = (owner: TestOrg = org(), factor = 2) => define(owner, doublingDefinition(factor));
  const doublingDefinition = (factor: number) => ({
    name: `times ${factor}`,
    inputSchema: { type: 'object', required: ['n'], properties: { n: { type: 'number' } } },
    steps: [{ id: 'double', ...jsonata(`$ * ${factor}`), input: 'input.n' }],
    output: 'steps.double.output',
  });
  /** A workflow without an inputSchema whose output is its input. */
  const echo = (owner: TestOrg = org()) =>
    define(owner, { name: 'echo', steps: [{ id: 'echo', ...jsonata('$') }], output: 'steps.echo.output' });

  const create = (workflowId: string, body: Record<string, unknown>, as: TestUser = org().admin) =>
    t().http().post(path(workflowId)).set(bearer(as)).send(body);
  const created = async (workflowId: string, body: Record<string, unknown>, as: TestUser = org().admin): Promise<TriggerWithSecret> => {
    const res = await create(workflowId, body, as);
    if (res.status !== 201) throw new Error(`create trigger: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as TriggerWithSecret;
  };
  const read = (workflowId: string, triggerId: string, as: TestUser = org().viewer) =>
    t().http().get(path(workflowId, triggerId)).set(bearer(as));
  const list = (workflowId: string, as: TestUser = org().viewer, query = '') =>
    t()
      .http()
      .get(`${path(workflowId)}${query}`)
      .set(bearer(as));
  const patch = (workflowId: string, triggerId: string, body: Record<string, unknown>, as: TestUser = org().admin) =>
    t().http().patch(path(workflowId, triggerId)).set(bearer(as)).send(body);
  const remove = (workflowId: string, triggerId: string, as: TestUser = org().admin) =>
    t().http().delete(path(workflowId, triggerId)).set(bearer(as));
  const rotate = (workflowId: string, triggerId: string, body?: Record<string, unknown>, as: TestUser = org().admin) => {
    const req = t()
      .http()
      .post(path(workflowId, triggerId, 'rotate-secret'))
      .set(bearer(as));
    return body === undefined ? req : req.send(body);
  };
  const eventsRes = (trigger: Trigger, as: TestUser = org().viewer, query = '') =>
    t()
      .http()
      .get(`${path(trigger.workflowId, trigger.id, 'events')}${query}`)
      .set(bearer(as));
  const events = async (trigger: Trigger, as: TestUser = org().viewer): Promise<TriggerEvent[]> => {
    const res = await eventsRes(trigger, as, '?limit=100');
    if (res.status !== 200) throw new Error(`events: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as TriggerEvent[];
  };
  const eventRes = (trigger: Trigger, eventId: string, as: TestUser = org().viewer) =>
    t()
      .http()
      .get(path(trigger.workflowId, trigger.id, 'events', eventId))
      .set(bearer(as));
  const replay = (trigger: Trigger, eventId: string, as: TestUser = org().member) =>
    t()
      .http()
      .post(path(trigger.workflowId, trigger.id, 'events', eventId, 'replay'))
      .set(bearer(as));

  const runsOf = async (workflowId: string, owner: TestOrg = org()): Promise<RunBody[]> => {
    const res = await t().http().get(`/api/workflows/${workflowId}/runs?limit=100`).set(bearer(owner.viewer));
    if (res.status !== 200) throw new Error(`runs: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as RunBody[];
  };
  const runOf = async (workflowId: string, runId: string, owner: TestOrg = org()): Promise<RunBody> => {
    const res = await t().http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(owner.viewer));
    if (res.status !== 200) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as RunBody;
  };
  const settled = async (workflowId: string, runId: string, owner: TestOrg = org()): Promise<RunBody> => {
    let status: unknown;
    return eventually(
      async () => {
        const run = await runOf(workflowId, runId, owner);
        status = run.status;
        return ['queued', 'running'].includes(run.status) ? undefined : run;
      },
      { timeoutMs: 20_000, intervalMs: 100, message: () => `run ${runId} to finish (still ${String(status)})` },
    );
  };

  /** POST to the hook, the raw `payload` as it is (JSON unless `headers` say otherwise). */
  const hook = (target: Trigger | string, payload?: string | Buffer, headers: Record<string, string> = {}, query = '') => {
    const url = typeof target === 'string' ? `/api/hooks/${target}` : new URL(target.url).pathname;
    const req = t()
      .http()
      .post(`${url}${query}`)
      .set({ 'Content-Type': 'application/json', ...headers });
    return payload === undefined ? req : req.send(payload);
  };
  const withBearer = (
    trigger: TriggerWithSecret | string,
    body: unknown,
    headers: Record<string, string> = {},
    query = '',
    token?: string,
  ) =>
    hook(trigger, JSON.stringify(body), { Authorization: `Bearer ${token ?? (trigger as TriggerWithSecret).secret}`, ...headers }, query);
  const withStandard = (trigger: Trigger, secret: string, body: unknown, options: { id?: string; at?: Date } = {}) => {
    const payload = JSON.stringify(body);
    return hook(trigger, payload, standardSigned(secret, payload, options));
  };
  const withHub = (trigger: Trigger, secret: string, body: unknown, headers: Record<string, string> = {}) => {
    const payload = JSON.stringify(body);
    return hook(trigger, payload, { 'X-Hub-Signature-256': hubSignature(secret, payload), ...headers });
  };

  /** 202 and the HookResponse of a new event and run, with the run's Location. */
  const accepted = (res: Response, trigger: Trigger): HookAnswer => {
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 202,
      body: { eventId: expect.any(String), runId: expect.stringMatching(UUID), status: 'queued', duplicate: false },
    });
    expect(res.headers.location).toBe(`/api/workflows/${trigger.workflowId}/runs/${res.body.runId}`);
    return res.body as HookAnswer;
  };

  return {
    path,
    define,
    doubling,
    doublingDefinition,
    echo,
    create,
    created,
    read,
    list,
    patch,
    remove,
    rotate,
    eventsRes,
    events,
    eventRes,
    replay,
    runsOf,
    runOf,
    settled,
    hook,
    withBearer,
    withStandard,
    withHub,
    accepted,
  };
}

describe('inbound webhook triggers', () => {
  const state = fixture();
  const a = api(() => state);
  const t = () => state.t;
  const org = () => state.org;
  const other = () => state.other;
  const { path, doubling, echo, create, created, read, list, patch, remove, rotate, events, eventRes, replay, runsOf, hook } = a;
  const { withBearer, withStandard, withHub, accepted, settled, runOf } = a;

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

    it('creates an hmac-sha256 trigger with the GitHub defaults and a generated secret', async () => {
      const body = await created(workflowId, { scheme: 'hmac-sha256' });
      expect(body).toMatchObject({
        name: null,
        scheme: 'hmac-sha256',
        signatureHeader: 'X-Hub-Signature-256',
        signatureEncoding: 'hex',
        signaturePrefix: 'sha256=',
        dedupe: 'idempotency-key',
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

    it('accepts the bounds: waitSeconds 1 and 60, a name of 100, hmac secrets of 16 and 256, the current version', async () => {
      const elsewhere = await doubling();
      for (const body of [
        { scheme: 'bearer', responseMode: 'sync', waitSeconds: 1 },
        { scheme: 'bearer', responseMode: 'sync', waitSeconds: 60 },
        { scheme: 'bearer', name: 'n'.repeat(100) },
        { scheme: 'hmac-sha256', secret: 's'.repeat(16) },
        { scheme: 'hmac-sha256', secret: 's'.repeat(256) },
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

  describe('the hook: standard-webhooks', () => {
    /** A fresh echo workflow with one standard-webhooks trigger. */
    const fresh = async (body: Record<string, unknown> = {}) => created(await echo(), { scheme: 'standard-webhooks', ...body });

    it('accepts a sender signing with the standardwebhooks library: 202, a run with the body as input, triggered by the webhook', async () => {
      const trigger = await fresh();
      const message = { type: 'invoice.paid', data: { id: 'in_1', amount: 4200, lines: [1, 2, 3] } };
      const webhookId = `msg_${randomUUID()}`;
      const answer = accepted(await withStandard(trigger, trigger.secret, message, { id: webhookId }), trigger);

      const runs = await runsOf(trigger.workflowId);
      expect(runs).toEqual([expect.objectContaining({ id: answer.runId, input: message })]);
      const run = await settled(trigger.workflowId, answer.runId);
      expect(run).toMatchObject({ status: 'succeeded', input: message, output: message });
      expect(run.triggeredBy).toEqual({ type: 'webhook', id: trigger.id, eventId: answer.eventId });

      expect(await events(trigger)).toEqual([
        {
          id: answer.eventId,
          receivedAt: isoString,
          source: expect.stringMatching(LOOPBACK),
          status: 'started',
          runId: answer.runId,
          dedupeKey: webhookId,
          error: null,
          replayOf: null,
        },
      ]);
    });

    it('accepts a space-separated list of signatures when one of them is right', async () => {
      const trigger = await fresh();
      const payload = JSON.stringify({ ok: true });
      const headers = standardSigned(trigger.secret, payload);
      const wrong = `v1,${createHmac('sha256', 'nope').update(payload).digest('base64')}`;
      accepted(await hook(trigger, payload, { ...headers, 'webhook-signature': `${wrong} ${headers['webhook-signature']}` }), trigger);
    });

    it('refuses a body with one byte changed: 401 UNAUTHORIZED, no run, no event', async () => {
      const trigger = await fresh();
      const payload = JSON.stringify({ amount: 100 });
      const headers = standardSigned(trigger.secret, payload);
      const res = await hook(trigger, payload.replace('100', '900'), headers);
      expectError(res, 401, 'UNAUTHORIZED');
      expect(await runsOf(trigger.workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);
    });

    it('refuses a wrong secret, a missing header, a signature without v1: 401 each, nothing stored', async () => {
      const trigger = await fresh();
      const payload = JSON.stringify({ amount: 100 });
      const good = standardSigned(trigger.secret, payload);
      const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([key]) => key !== name));
      const attempts: Array<[string, Record<string, string>]> = [
        ['another secret', standardSigned(whsec(), payload, { id: good['webhook-id'] })],
        ['no webhook-id', without('webhook-id')],
        ['no webhook-timestamp', without('webhook-timestamp')],
        ['no webhook-signature', without('webhook-signature')],
        ['another webhook-id than signed', { ...good, 'webhook-id': `msg_${randomUUID()}` }],
        ['the bare base64 without v1,', { ...good, 'webhook-signature': good['webhook-signature'].slice('v1,'.length) }],
        ['v2 instead of v1', { ...good, 'webhook-signature': good['webhook-signature'].replace(/^v1,/, 'v2,') }],
        ['a bearer token instead', { Authorization: `Bearer ${trigger.secret}` }],
      ];
      for (const [what, headers] of attempts) {
        const res = await hook(trigger, payload, headers);
        expect({ what, status: res.status, body: res.body as unknown }).toEqual({
          what,
          status: 401,
          body: { error: { code: 'UNAUTHORIZED', message: expect.any(String), status: 401 } },
        });
      }
      expect(await runsOf(trigger.workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);
    });

    it('refuses a timestamp more than 5 minutes old or ahead: 401, no run; 4 minutes is fine', async () => {
      const trigger = await fresh();
      const minutes = (n: number) => new Date(Date.now() + n * 60_000);
      expectError(await withStandard(trigger, trigger.secret, { late: true }, { at: minutes(-6) }), 401, 'UNAUTHORIZED');
      expectError(await withStandard(trigger, trigger.secret, { early: true }, { at: minutes(6) }), 401, 'UNAUTHORIZED');
      expectError(await withStandard(trigger, trigger.secret, { ancient: true }, { at: new Date(0) }), 401, 'UNAUTHORIZED');
      expect(await runsOf(trigger.workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);
      const answer = accepted(await withStandard(trigger, trigger.secret, { recent: true }, { at: minutes(-4) }), trigger);
      expect((await runsOf(trigger.workflowId)).map((r) => r.id)).toEqual([answer.runId]);
    });

    it('starts one run for a webhook-id sent twice: the same runId, duplicate true', async () => {
      const trigger = await fresh();
      const id = `msg_${randomUUID()}`;
      const first = accepted(await withStandard(trigger, trigger.secret, { attempt: 1 }, { id }), trigger);
      const again = await withStandard(trigger, trigger.secret, { attempt: 1 }, { id });
      expect(again.status).toBe(202);
      expect(again.body).toEqual({ eventId: expect.any(String), runId: first.runId, status: expect.any(String), duplicate: true });
      expect((await runsOf(trigger.workflowId)).map((r) => r.id)).toEqual([first.runId]);

      // Another webhook-id: another run.
      const next = accepted(await withStandard(trigger, trigger.secret, { attempt: 1 }, { id: `msg_${randomUUID()}` }), trigger);
      expect(next.runId).not.toBe(first.runId);
      expect((await runsOf(trigger.workflowId)).map((r) => r.id).sort()).toEqual([first.runId, next.runId].sort());

      // A known webhook-id with a bad signature is refused, not answered as a duplicate.
      const payload = JSON.stringify({ attempt: 1 });
      const forged = await hook(trigger, payload, { ...standardSigned(whsec(), payload, { id }) });
      expectError(forged, 401, 'UNAUTHORIZED');
      expect(JSON.stringify(forged.body)).not.toContain(first.runId);
    });

    it('starts one run for one webhook-id sent five times at once', async () => {
      const trigger = await fresh();
      const id = `msg_${randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: 5 }, () => withStandard(trigger, trigger.secret, { burst: true }, { id })));
      expect(answers.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
      const runIds = new Set(answers.map((r) => r.body.runId as string));
      expect(runIds.size).toBe(1);
      expect(answers.filter((r) => r.body.duplicate === false)).toHaveLength(1);
      expect((await runsOf(trigger.workflowId)).map((r) => r.id)).toEqual([...runIds]);
    });

    it('dedupes per trigger: the same webhook-id at another trigger is another run', async () => {
      const one = await fresh();
      const two = await created(one.workflowId, { scheme: 'standard-webhooks' });
      const id = `msg_${randomUUID()}`;
      const x = accepted(await withStandard(one, one.secret, { a: 1 }, { id }), one);
      const y = accepted(await withStandard(two, two.secret, { a: 1 }, { id }), two);
      expect(x.runId).not.toBe(y.runId);
      expect(await runsOf(one.workflowId)).toHaveLength(2);
    });

    it("maps with the trigger's mapping: the run input is the mapping's result", async () => {
      const trigger = await fresh({ mapping: "{ 'kind': body.type, 'amount': body.data.amount, 'id': headers.`webhook-id` }" });
      const id = `msg_${randomUUID()}`;
      const answer = accepted(await withStandard(trigger, trigger.secret, { type: 'invoice.paid', data: { amount: 7 } }, { id }), trigger);
      const run = await settled(trigger.workflowId, answer.runId);
      expect(run).toMatchObject({ status: 'succeeded', input: { kind: 'invoice.paid', amount: 7, id } });
    });
  });

  describe('the hook: hmac-sha256', () => {
    it('works GitHub style: X-Hub-Signature-256 over the raw body, deduped on X-GitHub-Delivery, mapped from headers and body', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, {
        scheme: 'hmac-sha256',
        dedupe: 'header',
        dedupeHeader: 'X-GitHub-Delivery',
        mapping: "{ 'ref': body.ref, 'who': headers.`x-github-event` }",
      });
      const push = { ref: 'refs/heads/main', commits: [{ id: 'abc' }], pusher: { name: 'octocat' } };
      const delivery = randomUUID();
      const github = (id: string) => ({ 'X-GitHub-Event': 'push', 'X-GitHub-Delivery': id, 'User-Agent': 'GitHub-Hookshot/1' });
      const first = accepted(await withHub(trigger, trigger.secret, push, github(delivery)), trigger);
      const run = await settled(workflowId, first.runId);
      expect(run).toMatchObject({
        status: 'succeeded',
        input: { ref: 'refs/heads/main', who: 'push' },
        output: { ref: 'refs/heads/main', who: 'push' },
      });
      expect(run.triggeredBy).toEqual({ type: 'webhook', id: trigger.id, eventId: first.eventId });
      expect(await events(trigger)).toEqual([expect.objectContaining({ id: first.eventId, status: 'started', dedupeKey: delivery })]);

      // GitHub redelivers: the same delivery id is the same run.
      const redelivered = await withHub(trigger, trigger.secret, push, github(delivery));
      expect(redelivered.status).toBe(202);
      expect(redelivered.body).toEqual({ eventId: expect.any(String), runId: first.runId, status: expect.any(String), duplicate: true });
      // Another delivery: another run.
      const second = accepted(await withHub(trigger, trigger.secret, push, github(randomUUID())), trigger);
      expect((await runsOf(workflowId)).map((r) => r.id).sort()).toEqual([first.runId, second.runId].sort());
    });

    it('refuses a wrong, missing or malformed signature: 401, no run, no event', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'hmac-sha256' });
      const payload = JSON.stringify({ ref: 'refs/heads/main' });
      const good = hubSignature(trigger.secret, payload);
      const attempts: Array<[string, string, Record<string, string>]> = [
        ['signed with another secret', payload, { 'X-Hub-Signature-256': hubSignature('another secret 0123456789', payload) }],
        ['the body changed by one byte', payload.replace('main', 'mainx'), { 'X-Hub-Signature-256': good }],
        ['no signature', payload, {}],
        ['no sha256= prefix', payload, { 'X-Hub-Signature-256': good.slice('sha256='.length) }],
        ['base64 instead of hex', payload, { 'X-Hub-Signature-256': `sha256=${hmac(trigger.secret, payload).digest('base64')}` }],
        ['the signature in another header', payload, { 'X-Signature': good }],
        ['a bearer token', payload, { Authorization: `Bearer ${trigger.secret}` }],
      ];
      for (const [what, body, headers] of attempts) {
        const res = await hook(trigger, body, headers);
        expect({ what, status: res.status, body: res.body as unknown }).toEqual({
          what,
          status: 401,
          body: { error: { code: 'UNAUTHORIZED', message: expect.any(String), status: 401 } },
        });
      }
      expect(await runsOf(workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);
      accepted(await hook(trigger, payload, { 'X-Hub-Signature-256': good }), trigger);
    });

    it('takes its own header, base64, no prefix and an own secret', async () => {
      const workflowId = await echo();
      const secret = 'our-shared-secret_42-characters-long!';
      const trigger = await created(workflowId, {
        scheme: 'hmac-sha256',
        secret,
        signatureHeader: 'X-Signature',
        signatureEncoding: 'base64',
        signaturePrefix: '',
      });
      const payload = JSON.stringify({ event: 'order.created', total: 12.5 });
      const signature = hmac(secret, payload).digest('base64');
      const answer = accepted(await hook(trigger, payload, { 'X-Signature': signature }), trigger);
      expect(await settled(workflowId, answer.runId)).toMatchObject({ input: { event: 'order.created', total: 12.5 } });
      expectError(await hook(trigger, payload, { 'X-Signature': hmac(secret, payload).digest('hex') }), 401, 'UNAUTHORIZED');
      expectError(await hook(trigger, payload, { 'X-Signature': `sha256=${signature}` }), 401, 'UNAUTHORIZED');
      expectError(await hook(trigger, payload, { 'X-Hub-Signature-256': hubSignature(secret, payload) }), 401, 'UNAUTHORIZED');
      expect(await runsOf(workflowId)).toHaveLength(1);
    });
  });

  describe('the hook: bearer', () => {
    it('accepts the right token (202) and refuses a wrong or missing one (401), storing nothing for those', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const attempts: Array<[string, Record<string, string>]> = [
        ['no Authorization', {}],
        ['a wrong token', { Authorization: `Bearer ${trigger.secret}x` }],
        ['an empty token', { Authorization: 'Bearer ' }],
        ['Basic with the token', { Authorization: `Basic ${Buffer.from(`x:${trigger.secret}`).toString('base64')}` }],
        ['the token without Bearer', { Authorization: trigger.secret }],
        ['a user JWT', bearer(org().admin)],
      ];
      for (const [what, headers] of attempts) {
        const res = await hook(trigger, JSON.stringify({ n: 1 }), headers);
        expect({ what, status: res.status, body: res.body as unknown }).toEqual({
          what,
          status: 401,
          body: { error: { code: 'UNAUTHORIZED', message: expect.any(String), status: 401 } },
        });
      }
      expect(await runsOf(workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);

      const answer = accepted(await withBearer(trigger, { n: 1 }), trigger);
      expect(await settled(workflowId, answer.runId)).toMatchObject({
        status: 'succeeded',
        input: { n: 1 },
        triggeredBy: { type: 'webhook', id: trigger.id, eventId: answer.eventId },
      });
    });

    it('dedupes on Idempotency-Key by default; without a key every request is a run; dedupe none ignores the key', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const key = randomUUID();
      const first = accepted(await withBearer(trigger, { n: 1 }, { 'Idempotency-Key': key }), trigger);
      const again = await withBearer(trigger, { n: 1 }, { 'Idempotency-Key': key });
      expect(again.status).toBe(202);
      expect(again.body).toMatchObject({ runId: first.runId, duplicate: true });
      expect((await events(trigger)).find((e) => e.id === first.eventId)).toMatchObject({ dedupeKey: key });
      accepted(await withBearer(trigger, { n: 1 }), trigger);
      accepted(await withBearer(trigger, { n: 1 }), trigger);
      expect(await runsOf(workflowId)).toHaveLength(3);

      const noneFlow = await echo();
      const none = await created(noneFlow, { scheme: 'bearer', dedupe: 'none' });
      const x = accepted(await withBearer(none, { n: 1 }, { 'Idempotency-Key': key }), none);
      const y = accepted(await withBearer(none, { n: 1 }, { 'Idempotency-Key': key }), none);
      expect(x.runId).not.toBe(y.runId);
      expect(await runsOf(noneFlow)).toHaveLength(2);
      expect((await events(none)).map((e) => e.dedupeKey)).toEqual([null, null]);
    });
  });

  describe('bodies and mapping', () => {
    it('maps { headers, body, query } to the run input, then runs it', async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, {
        scheme: 'bearer',
        mapping: "{ 'n': body.value * $number(query.factor), 'from': headers.`x-source` }",
      });
      const answer = accepted(await withBearer(trigger, { value: 7 }, { 'X-Source': 'crm' }, '?factor=3'), trigger);
      expect(await settled(workflowId, answer.runId)).toMatchObject({ status: 'succeeded', input: { n: 21, from: 'crm' }, output: 42 });
    });

    it('passes the body as it is without a mapping: JSON and +json parsed, text as a string, empty as null', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const auth = { Authorization: `Bearer ${trigger.secret}` };
      const cases: Array<[string, string | undefined, Record<string, string>, unknown]> = [
        ['JSON', '{"a":[1,2,{"b":null}]}', {}, { a: [1, 2, { b: null }] }],
        ['a JSON array', '[1,"two"]', {}, [1, 'two']],
        ['+json', '{"data":{"type":"things"}}', { 'Content-Type': 'application/vnd.api+json' }, { data: { type: 'things' } }],
        ['JSON with a charset', '{"c":"ü"}', { 'Content-Type': 'application/json; charset=utf-8' }, { c: 'ü' }],
        ['text', 'hello there', { 'Content-Type': 'text/plain' }, 'hello there'],
        ['a form', 'a=1&b=2', { 'Content-Type': 'application/x-www-form-urlencoded' }, 'a=1&b=2'],
        ['XML', '<ping id="1"/>', { 'Content-Type': 'application/xml' }, '<ping id="1"/>'],
        ['nothing', undefined, {}, null],
      ];
      for (const [what, payload, headers, input] of cases) {
        const res = await hook(trigger, payload, { ...auth, ...headers });
        expect({ what, status: res.status }).toEqual({ what, status: 202 });
        const run = await runOf(workflowId, res.body.runId as string);
        expect({ what, input: run.input }).toEqual({ what, input });
      }
    });

    it('refuses malformed JSON with 400 VALIDATION_FAILED and starts nothing', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      expectError(await hook(trigger, '{"a": 1', { Authorization: `Bearer ${trigger.secret}` }), 400, 'VALIDATION_FAILED');
      expect(await runsOf(workflowId)).toEqual([]);
    });

    it('refuses a mapping that fails: 400 VALIDATION_FAILED, a refused event with the error, no run', async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', mapping: "{ 'n': body.value + 1 }" });
      expectError(await withBearer(trigger, { value: 'seven' }), 400, 'VALIDATION_FAILED');
      expect(await runsOf(workflowId)).toEqual([]);
      const [event] = await events(trigger);
      expect(event).toEqual({
        id: expect.any(String),
        receivedAt: isoString,
        source: expect.stringMatching(LOOPBACK),
        status: 'refused',
        runId: null,
        dedupeKey: null,
        error: expect.anything(),
        replayOf: null,
      });
      expect(event.error).not.toBeNull();
      const detail = await eventRes(trigger, event.id);
      expect(detail.status).toBe(200);
      expect(detail.body).toMatchObject({ ...event, body: { value: 'seven' } });

      // The same trigger still starts runs for what it can map.
      const answer = accepted(await withBearer(trigger, { value: 20 }), trigger);
      expect(await settled(workflowId, answer.runId)).toMatchObject({ input: { n: 21 }, output: 42 });
    });

    it.each([
      ['never ends', "( $f := function($x){ $f($x + 1) }; { 'n': $f(0) } )"],
      ['allocates without end', "{ 'n': $count($sort([1..100000])) }"],
      ['builds a huge string', "{ 'n': $length($pad('', 500000000, 'x')) }"],
    ])('refuses a mapping that %s as a failed mapping (400, a refused event); the trigger keeps working', async (_what, mapping) => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', mapping });
      expectError(await withBearer(trigger, { n: 1 }), 400, 'VALIDATION_FAILED');
      expect(await runsOf(workflowId)).toEqual([]);
      expect((await events(trigger)).map((e) => [e.status, e.runId])).toEqual([['refused', null]]);
      expect((await patch(workflowId, trigger.id, { mapping: "{ 'n': body.n }" })).status).toBe(200);
      accepted(await withBearer(trigger, { n: 1 }), trigger);
    });

    it("refuses an input the workflow's inputSchema refuses: 400 VALIDATION_FAILED, a refused event, no run", async () => {
      const workflowId = await doubling();
      const plain = await created(workflowId, { scheme: 'bearer' });
      const mapped = await created(workflowId, { scheme: 'bearer', mapping: 'body.value' });
      expectError(await withBearer(plain, { m: 1 }), 400, 'VALIDATION_FAILED');
      expectError(await withBearer(plain, { n: 'one' }), 400, 'VALIDATION_FAILED');
      expectError(await withBearer(mapped, { value: 7 }), 400, 'VALIDATION_FAILED');
      expect(await runsOf(workflowId)).toEqual([]);
      expect((await events(plain)).map((e) => [e.status, e.runId])).toEqual([
        ['refused', null],
        ['refused', null],
      ]);
      for (const event of [...(await events(plain)), ...(await events(mapped))]) expect(event.error).not.toBeNull();
      expect((await events(mapped)).map((e) => e.status)).toEqual(['refused']);
    });
  });

  describe('sync mode', () => {
    it("answers 200 with the run's output once it finishes", async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', responseMode: 'sync', waitSeconds: 20 });
      const res = await withBearer(trigger, { n: 21 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        eventId: expect.any(String),
        runId: expect.stringMatching(UUID),
        status: 'succeeded',
        output: 42,
        error: null,
        duplicate: false,
      });
      expect(await runOf(workflowId, res.body.runId as string)).toMatchObject({
        status: 'succeeded',
        input: { n: 21 },
        output: 42,
        triggeredBy: { type: 'webhook', id: trigger.id, eventId: res.body.eventId },
      });
    });

    it('answers a duplicate the same way: 200 with the earlier run and its output, duplicate true', async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', responseMode: 'sync', waitSeconds: 20 });
      const key = randomUUID();
      const first = await withBearer(trigger, { n: 4 }, { 'Idempotency-Key': key });
      expect(first.body).toMatchObject({ status: 'succeeded', output: 8, duplicate: false });
      const again = await withBearer(trigger, { n: 4 }, { 'Idempotency-Key': key });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({
        eventId: expect.any(String),
        runId: first.body.runId,
        status: 'succeeded',
        output: 8,
        error: null,
        duplicate: true,
      });
      expect(await runsOf(workflowId)).toHaveLength(1);
    });

    it('answers 200 with the error of a run that failed', async () => {
      const workflowId = await a.define(org(), { name: 'fails', steps: [{ id: 'a', ...jsonata('$'), input: '$error("boom")' }] });
      const trigger = await created(workflowId, { scheme: 'bearer', responseMode: 'sync', waitSeconds: 20 });
      const res = await withBearer(trigger, {});
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        eventId: expect.any(String),
        runId: expect.stringMatching(UUID),
        status: 'failed',
        output: null,
        error: expect.objectContaining({ code: expect.any(String) }),
        duplicate: false,
      });
    });

    it('runs the pinned workflowVersion; an unpinned trigger runs the current one', async () => {
      const workflowId = await doubling();
      const pinned = await created(workflowId, { scheme: 'bearer', responseMode: 'sync', waitSeconds: 20, workflowVersion: 1 });
      const current = await created(workflowId, { scheme: 'bearer', responseMode: 'sync', waitSeconds: 20 });
      const redefined = await t().http().put(`/api/workflows/${workflowId}`).set(bearer(org().admin)).send(a.doublingDefinition(3));
      expect(redefined.status).toBe(200);
      expect(redefined.body.version).toBe(2);

      const one = await withBearer(pinned, { n: 5 });
      expect(one.body).toMatchObject({ status: 'succeeded', output: 10 });
      expect((await runOf(workflowId, one.body.runId as string)).workflowVersion).toBe(1);
      const two = await withBearer(current, { n: 5 });
      expect(two.body).toMatchObject({ status: 'succeeded', output: 15 });
      expect((await runOf(workflowId, two.body.runId as string)).workflowVersion).toBe(2);

      // Pinned to version 2 now.
      expect((await patch(workflowId, pinned.id, { workflowVersion: 2 })).body.workflowVersion).toBe(2);
      expect((await withBearer(pinned, { n: 5 })).body).toMatchObject({ output: 15 });
    });
  });

  describe('rotate-secret', () => {
    it('answers a new secret; the old one keeps working during the grace, and stops at once with graceSeconds 0', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'standard-webhooks' });
      const original = trigger.secret;
      accepted(await withStandard(trigger, original, { before: true }), trigger);

      const res = await rotate(workflowId, trigger.id, { graceSeconds: 3600 });
      expect(res.status).toBe(200);
      const { secret: _old, ...shown } = trigger;
      expect(res.body).toEqual({ ...shown, secret: expect.stringMatching(SW_SECRET), updatedAt: isoString });
      const second = res.body.secret as string;
      expect(second).not.toBe(original);
      expect(JSON.stringify((await read(workflowId, trigger.id)).body)).not.toContain(second);

      accepted(await withStandard(trigger, second, { with: 'new' }), trigger);
      accepted(await withStandard(trigger, original, { with: 'old, in the grace' }), trigger);

      const again = await rotate(workflowId, trigger.id, { graceSeconds: 0 });
      expect(again.status).toBe(200);
      const third = again.body.secret as string;
      expect([original, second]).not.toContain(third);
      accepted(await withStandard(trigger, third, { with: 'newest' }), trigger);
      expectError(await withStandard(trigger, second, { with: 'replaced, no grace' }), 401, 'UNAUTHORIZED');
      expectError(await withStandard(trigger, original, { with: 'first' }), 401, 'UNAUTHORIZED');
      expect(await runsOf(workflowId)).toHaveLength(4);
    });

    it('rotates a bearer token and an hmac secret; the grace defaults to a day', async () => {
      const workflowId = await echo();
      const token = await created(workflowId, { scheme: 'bearer' });
      const rotated = await rotate(workflowId, token.id);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).not.toBe(token.secret);
      accepted(await withBearer(token, { n: 1 }, {}, '', rotated.body.secret as string), token);
      accepted(await withBearer(token, { n: 2 }), token);
      expect((await rotate(workflowId, token.id, { graceSeconds: 0 })).status).toBe(200);
      expectError(await withBearer(token, { n: 3 }, {}, '', rotated.body.secret as string), 401, 'UNAUTHORIZED');

      const signed = await created(workflowId, { scheme: 'hmac-sha256', secret: 'the-first-shared-secret' });
      const next = await rotate(workflowId, signed.id, { graceSeconds: 0 });
      expect(next.status).toBe(200);
      expect(next.body.secret).toMatch(/^[\x20-\x7e]{16,256}$/);
      accepted(await withHub(signed, next.body.secret as string, { n: 1 }), signed);
      expectError(await withHub(signed, 'the-first-shared-secret', { n: 1 }), 401, 'UNAUTHORIZED');
    });

    it('stops the old secret once a short grace has passed', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const res = await rotate(workflowId, trigger.id, { graceSeconds: 1 });
      expect(res.status).toBe(200);
      accepted(await withBearer(trigger, { n: 1 }, {}, '', res.body.secret as string), trigger);
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      expectError(await withBearer(trigger, { n: 2 }), 401, 'UNAUTHORIZED');
      accepted(await withBearer(trigger, { n: 3 }, {}, '', res.body.secret as string), trigger);
    });

    it.each([-1, 604_801, 1.5, '60', null])('refuses graceSeconds %j with 400, and keeps the secret', async (graceSeconds) => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      expectError(await rotate(workflowId, trigger.id, { graceSeconds }), 400, 'VALIDATION_FAILED', 'graceSeconds');
      accepted(await withBearer(trigger, { n: 1 }), trigger);
    });

    it('accepts the largest grace, 7 days', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      expect((await rotate(workflowId, trigger.id, { graceSeconds: 604_800 })).status).toBe(200);
      expectError(await rotate(randomUUID(), trigger.id, {}), 404, 'WORKFLOW_NOT_FOUND');
      expectError(await rotate(workflowId, randomUUID(), {}), 404, 'TRIGGER_NOT_FOUND');
    });
  });

  describe('events and replay', () => {
    it('lists the events newest first (time, source, status, runId) and shows one with its request, without authorization or cookie', async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const key = randomUUID();
      const started = accepted(
        await withBearer(
          trigger,
          { n: 4 },
          // X-Forwarded-For is not believed without TRUST_PROXY: the source stays the peer's address.
          { Cookie: 'session=cookie-secret-value', 'X-Custom': 'yes', 'Idempotency-Key': key, 'X-Forwarded-For': '203.0.113.9' },
          '?a=1&b=two',
        ),
        trigger,
      );
      expectError(await withBearer(trigger, { m: 4 }), 400, 'VALIDATION_FAILED');

      const logged = await events(trigger);
      expect(logged).toEqual([
        expect.objectContaining({ status: 'refused', runId: null, replayOf: null }),
        {
          id: started.eventId,
          receivedAt: isoString,
          source: expect.stringMatching(LOOPBACK),
          status: 'started',
          runId: started.runId,
          dedupeKey: key,
          error: null,
          replayOf: null,
        },
      ]);
      for (const event of logged) expect(Object.keys(event).sort()).toEqual(EVENT_KEYS);
      expect(Date.parse(logged[0].receivedAt)).toBeGreaterThanOrEqual(Date.parse(logged[1].receivedAt));

      const detail = await eventRes(trigger, started.eventId);
      expect(detail.status).toBe(200);
      expect(detail.body).toEqual({
        ...logged[1],
        headers: expect.objectContaining({ 'x-custom': 'yes', 'idempotency-key': key, 'content-type': 'application/json' }),
        query: { a: '1', b: 'two' },
        body: { n: 4 },
      });
      const headers = detail.body.headers as Record<string, string>;
      for (const name of Object.keys(headers)) expect(name).toBe(name.toLowerCase());
      expect(headers).not.toHaveProperty('authorization');
      expect(headers).not.toHaveProperty('cookie');
      const shown = JSON.stringify(detail.body);
      expect(shown).not.toContain(trigger.secret);
      expect(shown).not.toContain('cookie-secret-value');
      // Not kept at all.
      const rows: unknown[] = await t()
        .app.get(DataSource)
        .query('SELECT * FROM workflow_trigger_events WHERE trigger_id = $1', [trigger.id]);
      expect(rows).toHaveLength(2);
      expect(JSON.stringify(rows)).not.toContain(trigger.secret);
      expect(JSON.stringify(rows)).not.toContain('cookie-secret-value');

      // Paged with a cursor.
      const first = await a.eventsRes(trigger, org().viewer, '?limit=1');
      expect(first.body).toEqual({ data: [logged[0]], nextCursor: expect.any(String) });
      const second = await a.eventsRes(trigger, org().viewer, `?limit=1&cursor=${encodeURIComponent(first.body.nextCursor as string)}`);
      expect(second.body).toEqual({ data: [logged[1]], nextCursor: null });
    });

    it("replays an event: a NEW event (replayOf) and a NEW run, mapped again with the trigger's current mapping", async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', mapping: "{ 'n': body.value }" });
      const key = randomUUID();
      const original = accepted(await withBearer(trigger, { value: 4 }, { 'Idempotency-Key': key }), trigger);
      expect(await settled(workflowId, original.runId)).toMatchObject({ input: { n: 4 }, output: 8 });
      expect((await patch(workflowId, trigger.id, { mapping: "{ 'n': body.value + 1 }" })).status).toBe(200);

      const res = await replay(trigger, original.eventId, org().member);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ eventId: expect.any(String), runId: expect.stringMatching(UUID), status: 'queued', duplicate: false });
      const replayed = res.body as HookAnswer;
      expect(replayed.eventId).not.toBe(original.eventId);
      expect(replayed.runId).not.toBe(original.runId);
      expect(res.headers.location).toBe(`/api/workflows/${workflowId}/runs/${replayed.runId}`);

      const run = await settled(workflowId, replayed.runId);
      expect(run).toMatchObject({ status: 'succeeded', input: { n: 5 }, output: 10 });
      expect(run.triggeredBy).toEqual({ type: 'webhook', id: trigger.id, eventId: replayed.eventId });
      expect((await runsOf(workflowId)).map((r) => r.id).sort()).toEqual([original.runId, replayed.runId].sort());

      const logged = await events(trigger);
      expect(logged).toEqual([
        expect.objectContaining({ id: replayed.eventId, status: 'started', runId: replayed.runId, replayOf: original.eventId }),
        expect.objectContaining({ id: original.eventId, status: 'started', runId: original.runId, replayOf: null }),
      ]);
      const detail = await eventRes(trigger, replayed.eventId);
      expect(detail.body).toMatchObject({ id: replayed.eventId, replayOf: original.eventId, runId: replayed.runId });

      // An admin replays too; each replay is one more run. The original is unchanged.
      const twice = await replay(trigger, original.eventId, org().admin);
      expect(twice.status).toBe(202);
      expect([original.runId, replayed.runId]).not.toContain(twice.body.runId);
      expect(await runsOf(workflowId)).toHaveLength(3);
      expect((await eventRes(trigger, original.eventId)).body).toMatchObject({ runId: original.runId, replayOf: null });
    });

    it('replays a refused event once the mapping is fixed: a run from the stored request', async () => {
      const workflowId = await doubling();
      const trigger = await created(workflowId, { scheme: 'bearer', mapping: "{ 'n': body.count }" });
      expectError(await withBearer(trigger, { amount: 6 }), 400, 'VALIDATION_FAILED');
      const [refused] = await events(trigger);
      expect(refused).toMatchObject({ status: 'refused', runId: null });

      // Still refused with the same mapping: 400, and no run.
      expectError(await replay(trigger, refused.id), 400, 'VALIDATION_FAILED');
      expect(await runsOf(workflowId)).toEqual([]);

      expect((await patch(workflowId, trigger.id, { mapping: "{ 'n': body.amount }" })).status).toBe(200);
      const res = await replay(trigger, refused.id);
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ runId: expect.stringMatching(UUID), duplicate: false });
      expect(await settled(workflowId, res.body.runId as string)).toMatchObject({ status: 'succeeded', input: { n: 6 }, output: 12 });
      expect((await events(trigger))[0]).toMatchObject({ id: res.body.eventId, status: 'started', replayOf: refused.id });
    });

    it('answers 404 TRIGGER_EVENT_NOT_FOUND for an unknown event', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      expectError(await eventRes(trigger, randomUUID()), 404, 'TRIGGER_EVENT_NOT_FOUND');
      expectError(await replay(trigger, randomUUID()), 404, 'TRIGGER_EVENT_NOT_FOUND');
      expect(await runsOf(workflowId)).toEqual([]);
    });
  });

  describe('not found, too large', () => {
    it('answers 413 PAYLOAD_TOO_LARGE for a body over 1 MiB, of any content type, and reads no body for an unknown trigger', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const auth = { Authorization: `Bearer ${trigger.secret}` };
      const json = `{"pad":"${'x'.repeat(MIB - 10 + 1)}"}`;
      expect(Buffer.byteLength(json)).toBe(MIB + 1);
      expectError(await hook(trigger, json, auth), 413, 'PAYLOAD_TOO_LARGE');
      const bytes = Buffer.alloc(MIB + 1, 0x61);
      expectError(await hook(trigger, bytes, { ...auth, 'Content-Type': 'application/octet-stream' }), 413, 'PAYLOAD_TOO_LARGE');
      expectError(await hook(trigger, bytes, { ...auth, 'Content-Type': 'text/plain' }), 413, 'PAYLOAD_TOO_LARGE');
      // The body is read only once the trigger is known (and the sender within its limits).
      expectError(await hook(randomUUID(), json, auth), 404, 'TRIGGER_NOT_FOUND');
      expect(await runsOf(workflowId)).toEqual([]);
      expect(await events(trigger)).toEqual([]);
      accepted(await withBearer(trigger, { pad: 'x'.repeat(1000) }), trigger);
    });

    it('accepts a body of exactly 1 MiB', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'bearer' });
      const text = 'y'.repeat(MIB);
      const answer = accepted(
        await hook(trigger, text, { Authorization: `Bearer ${trigger.secret}`, 'Content-Type': 'text/plain' }),
        trigger,
      );
      expect((await runOf(workflowId, answer.runId)).input).toBe(text);
    });

    it('answers 404 TRIGGER_NOT_FOUND, with one message, for a disabled trigger, a deleted workflow, a deleted trigger, a random and a malformed id', async () => {
      const workflowId = await echo();
      const disabled = await created(workflowId, { scheme: 'bearer', enabled: false });
      const gone = await created(workflowId, { scheme: 'bearer' });
      expect((await remove(workflowId, gone.id)).status).toBe(204);
      const doomedWorkflow = await echo();
      const orphan = await created(doomedWorkflow, { scheme: 'bearer' });
      accepted(await withBearer(orphan, { before: 'delete' }), orphan);
      expect((await t().http().delete(`/api/workflows/${doomedWorkflow}`).set(bearer(org().admin))).status).toBe(204);

      const answers: Array<[string, Response]> = [
        ['disabled', await withBearer(disabled, { n: 1 })],
        ['deleted trigger', await withBearer(gone, { n: 1 })],
        ['deleted workflow', await withBearer(orphan, { n: 1 })],
        ['random uuid', await withBearer(randomUUID(), { n: 1 }, {}, '', disabled.secret)],
        ['malformed', await withBearer('nope', { n: 1 }, {}, '', disabled.secret)],
        ['a number', await withBearer('12345', { n: 1 }, {}, '', disabled.secret)],
        ['almost a uuid', await withBearer(`${disabled.id.slice(0, -1)}z`, { n: 1 }, {}, '', disabled.secret)],
        ['a uuid with more', await withBearer(`${disabled.id}0`, { n: 1 }, {}, '', disabled.secret)],
      ];
      for (const [what, res] of answers) {
        expect({ what, status: res.status, body: res.body as unknown }).toEqual({
          what,
          status: 404,
          body: { error: { code: 'TRIGGER_NOT_FOUND', message: expect.any(String), status: 404 } },
        });
      }
      expect(new Set(answers.map(([, res]) => res.body.error.message as string)).size).toBe(1);
      // Without any credential, too: the lookup comes before authentication.
      expectError(await hook(randomUUID(), '{}'), 404, 'TRIGGER_NOT_FOUND');
      expect(await runsOf(workflowId)).toEqual([]);
      expect(await events(disabled)).toEqual([]);

      // Enabled again, it answers.
      expect((await patch(workflowId, disabled.id, { enabled: true })).status).toBe(200);
      accepted(await withBearer(disabled, { n: 1 }), disabled);
    });
  });

  describe('tenant isolation at the hook', () => {
    it("starts only its own organization's workflow, whatever the request says", async () => {
      const ours = await echo();
      const theirs = await echo(other());
      const ourTrigger = await created(ours, { scheme: 'bearer' });
      const theirTrigger = await created(theirs, { scheme: 'bearer' }, other().admin);

      // Nothing in the request points a trigger elsewhere: not the query, not a header, not the body.
      const answer = accepted(
        await withBearer(
          ourTrigger,
          { workflowId: theirs, organizationId: other().id },
          { 'X-Organization-Id': other().id },
          `?workflowId=${theirs}`,
        ),
        ourTrigger,
      );
      expect((await runsOf(ours)).map((r) => r.id)).toEqual([answer.runId]);
      expect(await runsOf(theirs, other())).toEqual([]);
      // Their admin cannot see our run through their workflow.
      const peek = await t().http().get(`/api/workflows/${theirs}/runs/${answer.runId}`).set(bearer(other().viewer));
      expect(peek.status).toBe(404);

      // One trigger's secret opens no other trigger.
      expectError(await withBearer(theirTrigger.id, { n: 1 }, {}, '', ourTrigger.secret), 401, 'UNAUTHORIZED');
      expectError(await withBearer(ourTrigger.id, { n: 1 }, {}, '', theirTrigger.secret), 401, 'UNAUTHORIZED');
      expect(await runsOf(theirs, other())).toEqual([]);
      expect(await events(theirTrigger, other().viewer)).toEqual([]);
    });

    it("cannot be pointed at another organization's workflow on create or PATCH", async () => {
      const ours = await echo();
      const theirs = await echo(other());
      // On their workflow: it does not exist for us.
      expectError(await create(theirs, { scheme: 'bearer' }), 404, 'WORKFLOW_NOT_FOUND');
      expect((await list(theirs, other().viewer)).body.data).toEqual([]);

      // A workflowId in the body is refused or ignored, never followed.
      const made = await create(ours, { scheme: 'bearer', workflowId: theirs });
      expect([201, 400]).toContain(made.status);
      const trigger = made.status === 201 ? (made.body as TriggerWithSecret) : await created(ours, { scheme: 'bearer' });
      expect(trigger.workflowId).toBe(ours);
      const moved = await patch(ours, trigger.id, { workflowId: theirs });
      expect([200, 400]).toContain(moved.status);
      expect((await read(ours, trigger.id)).body.workflowId).toBe(ours);
      expectError(await read(theirs, trigger.id, other().admin), 404, 'TRIGGER_NOT_FOUND');

      accepted(await withBearer(trigger, { n: 1 }), trigger);
      expect(await runsOf(ours)).toHaveLength(1);
      expect(await runsOf(theirs, other())).toEqual([]);
    });

    it('finds nothing by guessing: random ids are 404 at the hook', async () => {
      for (let i = 0; i < 20; i++) expectError(await hook(randomUUID(), '{}', { Authorization: 'Bearer guess' }), 404, 'TRIGGER_NOT_FOUND');
    });
  });
});

describe('inbound webhook triggers: rate limits per trigger and per organization', () => {
  const state = fixture({ HOOK_RATE_LIMIT_PER_TRIGGER: '3' });
  const a = api(() => state);

  it('answers 429 RATE_LIMIT_EXCEEDED with Retry-After past HOOK_RATE_LIMIT_PER_TRIGGER; another trigger is not held back', async () => {
    const workflowId = await a.echo();
    const busy = await a.created(workflowId, { scheme: 'bearer' });
    const quiet = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 3; i++) a.accepted(await a.withBearer(busy, { i }), busy);
    const over = await a.withBearer(busy, { i: 3 });
    expectError(over, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await a.events(busy)).length).toBe(3);
    // The limit comes before authentication: a wrong token is 429 too.
    expectError(await a.withBearer(busy, { i: 4 }, {}, '', 'wrong token'), 429, 'RATE_LIMIT_EXCEEDED');

    a.accepted(await a.withBearer(quiet, { i: 0 }), quiet);
    expect((await a.runsOf(workflowId)).filter((r) => r.triggeredBy.id === busy.id)).toHaveLength(3);
  });

  it("counts hook requests in the organization's tier budget, with the same RateLimit headers", async () => {
    const { t } = state;
    const org = await t.newOrg('enterprise');
    // The PATCH is the window's first request; with the four set-up requests, five of nine.
    const limit = await t.http().patch('/api/subscription').set(bearer(org.admin)).send({ rateLimitPerMinute: 9 });
    expect(limit.status).toBe(200);
    await install(t, org, 'transform');
    const workflowId = await a.echo(org);
    // Two triggers taking turns, so neither reaches HOOK_RATE_LIMIT_PER_TRIGGER (3) first.
    const pair = [
      await a.created(workflowId, { scheme: 'bearer' }, org.admin),
      await a.created(workflowId, { scheme: 'bearer' }, org.admin),
    ];
    const answers: Response[] = [];
    for (let i = 0; i < 6; i++) answers.push(await a.withBearer(pair[i % 2], { i }));
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202, 202, 429, 429]);
    expect(answers[0].headers['ratelimit-policy']).toBe('"enterprise";q=9;w=60');
    expectError(answers[4], 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(answers[4].headers['retry-after'])).toBeGreaterThan(0);
    // The same counter: the organization's API calls are held back too.
    expect((await t.http().get('/api/workflows').set(bearer(org.viewer))).status).toBe(429);
  });
});

describe('inbound webhook triggers: rate limit per source', () => {
  const state = fixture({ HOOK_RATE_LIMIT_PER_SOURCE: '5' });
  const a = api(() => state);

  it('answers 429 past HOOK_RATE_LIMIT_PER_SOURCE from one address, first of all checks; the admin API is not held back', async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 3; i++) a.accepted(await a.withBearer(trigger, { i }), trigger);
    expectError(await a.hook(randomUUID(), '{}'), 404, 'TRIGGER_NOT_FOUND');
    expectError(await a.withBearer(trigger, { i: 'wrong' }, {}, '', 'wrong token'), 401, 'UNAUTHORIZED');
    // Six from this address: the limit holds whatever the trigger, even one that does not exist.
    const over = await a.withBearer(trigger, { i: 5 });
    expectError(over, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expectError(await a.hook(randomUUID(), '{}'), 429, 'RATE_LIMIT_EXCEEDED');
    // Claiming another address does not help without TRUST_PROXY.
    expectError(await a.withBearer(trigger, { i: 6 }, { 'X-Forwarded-For': '198.51.100.7' }), 429, 'RATE_LIMIT_EXCEEDED');
    expect(await a.runsOf(workflowId)).toHaveLength(3);
    expect((await a.list(workflowId)).status).toBe(200);
  });

  it('checks the source before the size: a body over 1 MiB from a source over its limit is 429, not 413', async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    // This address is at its limit (the spec before used it up) or gets there now.
    let answer = await a.withBearer(trigger, { i: 0 });
    for (let i = 1; answer.status !== 429 && i < 10; i++) answer = await a.withBearer(trigger, { i });
    expectError(answer, 429, 'RATE_LIMIT_EXCEEDED');
    const big = await a.hook(trigger, Buffer.alloc(MIB + 1, 0x61), {
      'Content-Type': 'text/plain',
      Authorization: `Bearer ${trigger.secret}`,
    });
    expectError(big, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(big.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('inbound webhook triggers: RATE_LIMIT_ENABLED=false', () => {
  const state = fixture({ RATE_LIMIT_ENABLED: 'false', HOOK_RATE_LIMIT_PER_TRIGGER: '1', HOOK_RATE_LIMIT_PER_SOURCE: '1' });
  const a = api(() => state);

  it("switches the hook's limits off too", async () => {
    const workflowId = await a.echo();
    const trigger = await a.created(workflowId, { scheme: 'bearer' });
    for (let i = 0; i < 4; i++) a.accepted(await a.withBearer(trigger, { i }), trigger);
    expect(await a.runsOf(workflowId)).toHaveLength(4);
  });
});
