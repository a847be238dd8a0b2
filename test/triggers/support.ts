import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Response } from 'supertest';
import type { components } from '../../clients/typescript/src/index';
import { install } from '../support/agents';
import { eventually } from '../support/eventually';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from '../support/test-app';

/**
 * What the inbound webhook trigger specs (issue 17, part 2) share. They are written from the
 * contract: the admin routes under /api/workflows/:id/triggers and the public hook
 * POST /api/hooks/:triggerId, driven the way a sender would: Standard Webhooks signed with the
 * reference `standardwebhooks` library, GitHub's X-Hub-Signature-256, a bearer token. Every
 * workflow here is a transform.jsonata step, so runs finish fast and offline. The answers are
 * typed with the generated client's schemas (clients/typescript).
 */
export const PUBLIC_URL = 'https://platform.test.example';
export const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const SW_SECRET = /^whsec_[A-Za-z0-9+/]+=*$/;
export const LOOPBACK = /^(::ffff:127\.0\.0\.1|127\.0\.0\.1|::1)$/;
export const MIB = 1024 * 1024;
export const isoString = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

type Schemas = components['schemas'];
export type Trigger = Schemas['TriggerResponse'];
/** A trigger as create and rotate-secret answer it: with its secret (optional in the schema, as the other answers leave it out). */
export type TriggerWithSecret = Trigger & { secret: string };
export type HookAnswer = Schemas['HookResponse'];
export type TriggerEvent = Schemas['TriggerEventResponse'];
export type TriggerEventDetail = Schemas['TriggerEventDetailResponse'];
/** A run as a list shows it (without its steps). */
export type Run = Schemas['RunResponse'];
/** A run as GET /api/workflows/:id/runs/:runId shows it (with its steps). */
export type RunWithSteps = Schemas['RunWithStepsResponse'];

export const TRIGGER_KEYS = [
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
export const EVENT_KEYS = ['dedupeKey', 'error', 'id', 'receivedAt', 'replayOf', 'runId', 'source', 'status'];

/** The Standard Webhooks headers a sender using the reference library writes. */
export function standardSigned(secret: string, payload: string, options: { id?: string; at?: Date } = {}): Record<string, string> {
  const id = options.id ?? `msg_${randomUUID()}`;
  const at = options.at ?? new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, payload),
  };
}

export const hmac = (secret: string, payload: string | Buffer) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(payload);
/** GitHub's X-Hub-Signature-256 value. */
export const hubSignature = (secret: string, payload: string | Buffer) => `sha256=${hmac(secret, payload).digest('hex')}`;

/** A fresh Standard Webhooks secret of `bytes` random bytes. */
export const whsec = (bytes = 32) => `whsec_${randomBytes(bytes).toString('base64')}`;

/** Everything the organization-facing parts of a spec file share: one app, two organizations. */
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

/**
 * What a trigger spec's describe block sets up: the fixture, its requests, and accessors for
 * what the fixture makes before the tests (the app, the first and the second organization).
 */
export function triggerSpec(env: Record<string, string> = {}) {
  const state = fixture(env);
  return { ...api(() => state), t: () => state.t, org: () => state.org, other: () => state.other };
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

  const runsOf = async (workflowId: string, owner: TestOrg = org()): Promise<Run[]> => {
    const res = await t().http().get(`/api/workflows/${workflowId}/runs?limit=100`).set(bearer(owner.viewer));
    if (res.status !== 200) throw new Error(`runs: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Run[];
  };
  const runOf = async (workflowId: string, runId: string, owner: TestOrg = org()): Promise<RunWithSteps> => {
    const res = await t().http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(owner.viewer));
    if (res.status !== 200) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as RunWithSteps;
  };
  const settled = async (workflowId: string, runId: string, owner: TestOrg = org()): Promise<RunWithSteps> => {
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
