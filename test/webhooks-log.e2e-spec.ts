import { setTimeout as sleep } from 'node:timers/promises';
import { TransactionHost } from '@nestjs-cls/transactional';
import { Webhook } from 'standardwebhooks';
import { MessageRepository } from '../src/modules/webhooks/domain/webhook.repository';
import { EventOutbox } from '../src/shared/events/event-outbox';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';
import { Receiver } from './support/webhook-receiver';
import { expectError } from './support/envelope';

interface Delivery {
  id: string;
  type: string;
  status: string;
  attempts: number;
  createdAt: string;
  finishedAt: string | null;
  nextAttemptAt: string | null;
  error: { code: string; message: string } | null;
}

const DELIVERY_KEYS = ['attempts', 'createdAt', 'error', 'finishedAt', 'id', 'nextAttemptAt', 'status', 'type'];
const DAY_MS = 86_400_000;

describe('webhook delivery log', () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
  });

  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const api = (user: TestUser) => ({
    log: (id: string, query = '') => t.http().get(`/api/webhooks/${id}/deliveries${query}`).set(bearer(user)),
    detail: (id: string, messageId: string) => t.http().get(`/api/webhooks/${id}/deliveries/${messageId}`).set(bearer(user)),
    redeliver: (id: string, messageId: string) =>
      t.http().post(`/api/webhooks/${id}/deliveries/${messageId}/redeliver`).set(bearer(user)).send({}),
    recover: (id: string, body: object) => t.http().post(`/api/webhooks/${id}/recover`).set(bearer(user)).send(body),
    test: (id: string) => t.http().post(`/api/webhooks/${id}/test`).set(bearer(user)).send({}),
    patch: (id: string, body: object) => t.http().patch(`/api/webhooks/${id}`).set(bearer(user)).send(body),
  });

  async function endpoint(owner: TestOrg, path: string, extra: object = {}): Promise<{ id: string; secret: string }> {
    const res = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(owner.admin))
      .send({ url: receiver.url(path), eventTypes: ['plugin.*'], ...extra });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, secret: res.body.secret as string };
  }

  /** A `plugin.installed` event of the organization, committed as a change would write it. */
  async function publish(owner: TestOrg, slug: string): Promise<void> {
    const outbox = t.app.get(EventOutbox);
    await t.app
      .get(TransactionHost)
      .withTransaction(() => outbox.publish([{ organizationId: owner.id, type: 'plugin.installed', data: { slug } }]));
    outbox.committed();
  }

  async function endpointOf(owner: TestOrg, id: string): Promise<{ enabled: boolean }> {
    return (await t.http().get(`/api/webhooks/${id}`).set(bearer(owner.viewer))).body as { enabled: boolean };
  }

  async function log(owner: TestOrg, id: string, query = ''): Promise<Delivery[]> {
    const res = await api(owner.viewer).log(id, query);
    expect(res.status).toBe(200);
    return res.body.data as Delivery[];
  }

  /** The log once `ready` holds for it. */
  function logWhen(owner: TestOrg, id: string, ready: (data: Delivery[]) => boolean, what: string): Promise<Delivery[]> {
    return eventually(
      async () => {
        const data = await log(owner, id);
        return ready(data) ? data : null;
      },
      { timeoutMs: 20_000, message: what },
    );
  }

  const slugOf = (body: string) => (JSON.parse(body) as { data: { slug?: string } }).data.slug;

  it('lists messages newest first with status and attempts; the detail has the payload and the attempt log', async () => {
    const org = await t.newOrg('team');
    const hook = await endpoint(org, '/log/flaky');
    const busy = `busy ${'x'.repeat(5000)}`;
    receiver.script('/log/flaky', { status: 503, headers: { 'retry-after': '1' }, body: busy });
    await publish(org, 'first');

    const [first] = await logWhen(org, hook.id, (d) => d[0]?.status === 'succeeded', 'the retried message to succeed');
    expect(Object.keys(first).sort()).toEqual(DELIVERY_KEYS);
    expect(first).toEqual({
      id: receiver.on('/log/flaky')[0].headers['webhook-id'],
      type: 'plugin.installed',
      status: 'succeeded',
      attempts: 2,
      createdAt: expect.any(String),
      finishedAt: expect.any(String),
      nextAttemptAt: null,
      error: null,
    });

    const detail = await api(org.viewer).detail(hook.id, first.id);
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual({
      ...first,
      payload: { type: 'plugin.installed', timestamp: expect.any(String), data: { slug: 'first' } },
      attemptLog: [
        { attemptedAt: expect.any(String), statusCode: 503, latencyMs: expect.any(Number), responseBody: busy.slice(0, 4096), error: null },
        { attemptedAt: expect.any(String), statusCode: 204, latencyMs: expect.any(Number), responseBody: '', error: null },
      ],
    });
    // The payload is the body as sent.
    expect(detail.body.payload).toEqual(JSON.parse(receiver.on('/log/flaky')[1].body));

    await publish(org, 'second');
    const both = await logWhen(org, hook.id, (d) => d.length === 2 && d[0].status === 'succeeded', 'the second message');
    expect(both[1].id).toBe(first.id);
    expect(both[0].id).not.toBe(first.id);
  });

  it('filters by status and since, pages with a cursor, and shows a message waiting for its retry as pending', async () => {
    const org = await t.newOrg('team');
    const hook = await endpoint(org, '/log/filters');
    await publish(org, 'ok');
    const [ok] = await logWhen(org, hook.id, (d) => d[0]?.status === 'succeeded', 'the first message');

    receiver.script('/log/filters', { status: 503, headers: { 'retry-after': '3600' } });
    await publish(org, 'later');
    const [later] = await logWhen(org, hook.id, (d) => d.length === 2 && d[0].error !== null, 'the failed first attempt');
    expect(later).toMatchObject({
      status: 'pending',
      attempts: 1,
      finishedAt: null,
      error: { code: 'DELIVERY_FAILED', message: 'The receiver answered 503' },
    });
    expect(Date.parse(later.nextAttemptAt!)).toBeGreaterThan(Date.now() + 3_000_000);
    expectError(await api(org.admin).redeliver(hook.id, later.id), 409, 'WEBHOOK_MESSAGE_PENDING');

    await sleep(5);
    const since = new Date().toISOString();
    receiver.script('/log/filters', { status: 410 });
    await publish(org, 'gone');
    const [gone] = await logWhen(org, hook.id, (d) => d.length === 3 && d[0].status === 'failed', 'the 410');
    await eventually(async () => !(await endpointOf(org, hook.id)).enabled, { message: 'the endpoint to be disabled' });
    await publish(org, 'skipped');
    const [skipped] = await logWhen(org, hook.id, (d) => d.length === 4, 'the skipped message');
    expect(skipped).toMatchObject({ status: 'skipped', attempts: 0, error: { code: 'ENDPOINT_DISABLED' } });

    const ids = async (query: string) => (await log(org, hook.id, query)).map((d) => d.id);
    expect(await ids('?status=succeeded')).toEqual([ok.id]);
    expect(await ids('?status=pending')).toEqual([later.id]);
    expect(await ids('?status=failed')).toEqual([gone.id]);
    expect(await ids('?status=skipped')).toEqual([skipped.id]);
    expect(await ids(`?since=${encodeURIComponent(since)}`)).toEqual([skipped.id, gone.id]);
    expect(await ids(`?since=${encodeURIComponent(since)}&status=pending`)).toEqual([]);

    const page = await api(org.viewer).log(hook.id, '?limit=3');
    expect(page.body.data.map((d: Delivery) => d.id)).toEqual([skipped.id, gone.id, later.id]);
    const rest = await api(org.viewer).log(hook.id, `?limit=3&cursor=${page.body.nextCursor as string}`);
    expect(rest.body).toEqual({ data: [expect.objectContaining({ id: ok.id })], nextCursor: null });

    expectError(await api(org.viewer).log(hook.id, '?status=queued'), 400, 'VALIDATION_FAILED');
    expectError(await api(org.viewer).log(hook.id, '?since=yesterday'), 400, 'VALIDATION_FAILED');
    // Nothing goes to a disabled endpoint: a redelivery says so.
    expectError(await api(org.admin).redeliver(hook.id, ok.id), 409, 'WEBHOOK_DISABLED');
  });

  it('redelivers a finished message with the same webhook-id and a newer timestamp', async () => {
    const org = await t.newOrg('team');
    const hook = await endpoint(org, '/log/redeliver');
    await publish(org, 'again');
    const [message] = await logWhen(org, hook.id, (d) => d[0]?.status === 'succeeded', 'the first delivery');
    // The webhook-timestamp is in whole seconds: wait until the clock is in the second after the
    // first delivery's, so the redelivery's (taken when it is sent, after this) is newer.
    const [delivered] = receiver.on('/log/redeliver');
    const nextSecond = (Number(delivered.headers['webhook-timestamp']) + 1) * 1000;
    while (Date.now() < nextSecond) await sleep(nextSecond - Date.now());

    expectError(await api(org.viewer).redeliver(hook.id, message.id), 403, 'FORBIDDEN');
    expectError(await api(org.member).redeliver(hook.id, message.id), 403, 'FORBIDDEN');
    const res = await api(org.admin).redeliver(hook.id, message.id);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ...message, status: 'pending', finishedAt: null });

    const [first, second] = await eventually(() => (receiver.on('/log/redeliver').length >= 2 ? receiver.on('/log/redeliver') : null), {
      message: 'the redelivery',
    });
    expect(second.headers['webhook-id']).toBe(message.id);
    expect(first.headers['webhook-id']).toBe(message.id);
    expect(Number(second.headers['webhook-timestamp'])).toBeGreaterThan(Number(first.headers['webhook-timestamp']));
    expect(second.body).toBe(first.body);
    expect(new Webhook(hook.secret).verify(second.body, second.headers as Record<string, string>)).toMatchObject({
      data: { slug: 'again' },
    });

    const [after] = await logWhen(org, hook.id, (d) => d[0].status === 'succeeded', 'the redelivery to be recorded');
    expect(after).toMatchObject({ id: message.id, attempts: 2 });
    expect((await api(org.viewer).detail(hook.id, message.id)).body.attemptLog).toHaveLength(2);
  });

  it('recovers every failed or skipped message created since a time, in the background, with the same ids', async () => {
    const org = await t.newOrg('team');
    const hook = await endpoint(org, '/log/recover', { enabled: false });
    await publish(org, 'early');
    await logWhen(org, hook.id, (d) => d[0]?.status === 'skipped', 'the early skipped message');
    await sleep(5);
    const since = new Date().toISOString();

    expect((await api(org.admin).patch(hook.id, { enabled: true })).status).toBe(200);
    receiver.script('/log/recover', { status: 410 });
    await publish(org, 'gone');
    await logWhen(org, hook.id, (d) => d.length === 2 && d[0].status === 'failed', 'the 410');
    await eventually(async () => !(await endpointOf(org, hook.id)).enabled, { message: 'the endpoint to be disabled' });
    await publish(org, 'late');
    const [late, gone, early] = await logWhen(org, hook.id, (d) => d.length === 3, 'the late skipped message');
    expect([late.status, gone.status, early.status]).toEqual(['skipped', 'failed', 'skipped']);

    // What a recover pages through (500 at a time): oldest first, each page after the last one's position.
    const messages = t.app.get(MessageRepository);
    const pageAfter = (after?: { id: string; createdAt: string }) =>
      t.run(() => messages.failedSince(hook.id, new Date(since), 1, after && { id: after.id, createdAt: new Date(after.createdAt) }));
    expect((await pageAfter()).map((m) => m.id)).toEqual([gone.id]);
    expect((await pageAfter(gone)).map((m) => m.id)).toEqual([late.id]);
    expect(await pageAfter(late)).toEqual([]);

    expectError(await api(org.admin).recover(hook.id, { since }), 409, 'WEBHOOK_DISABLED');
    expect((await api(org.admin).patch(hook.id, { enabled: true })).status).toBe(200);
    expectError(await api(org.viewer).recover(hook.id, { since }), 403, 'FORBIDDEN');
    expectError(await api(org.admin).recover(hook.id, {}), 400, 'VALIDATION_FAILED');
    expectError(
      await api(org.admin).recover(hook.id, { since: new Date(Date.now() - 31 * DAY_MS).toISOString() }),
      400,
      'VALIDATION_FAILED',
    );
    expectError(await api(org.admin).recover(hook.id, { since: new Date(Date.now() + 3_600_000).toISOString() }), 400, 'VALIDATION_FAILED');

    const res = await api(org.admin).recover(hook.id, { since });
    expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 202, body: { since } });

    const received = await eventually(() => (receiver.on('/log/recover').length >= 3 ? receiver.on('/log/recover') : null), {
      message: 'the recovered messages',
    });
    // The 410, then both recovered messages under their own ids; the one before `since` stays.
    expect(
      received
        .slice(1)
        .map((r) => [slugOf(r.body), r.headers['webhook-id']])
        .sort(),
    ).toEqual(
      [
        ['gone', gone.id],
        ['late', late.id],
      ].sort(),
    );
    const after = await logWhen(
      org,
      hook.id,
      (d) => d[0].status === 'succeeded' && d[1].status === 'succeeded',
      'the recovery to be recorded',
    );
    expect(after.map((d) => [d.id, d.status])).toEqual([
      [late.id, 'succeeded'],
      [gone.id, 'succeeded'],
      [early.id, 'skipped'],
    ]);
    expect(receiver.on('/log/recover').filter((r) => slugOf(r.body) === 'early')).toEqual([]);
  });

  it('sends a webhook.test event to this endpoint only and answers its attempt', async () => {
    const org = await t.newOrg('team');
    const hook = await endpoint(org, '/log/test');
    const bystander = await endpoint(org, '/log/test-other', { eventTypes: ['*'] });

    expectError(await api(org.viewer).test(hook.id), 403, 'FORBIDDEN');
    expectError(await api(org.member).test(hook.id), 403, 'FORBIDDEN');
    const res = await api(org.admin).test(hook.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      messageId: expect.any(String),
      attempt: { attemptedAt: expect.any(String), statusCode: 204, latencyMs: expect.any(Number), responseBody: '', error: null },
    });

    const [got] = receiver.on('/log/test');
    expect(got.headers['webhook-id']).toBe(res.body.messageId);
    expect(new Webhook(hook.secret).verify(got.body, got.headers as Record<string, string>)).toEqual({
      type: 'webhook.test',
      timestamp: expect.any(String),
      data: { endpointId: hook.id },
    });
    // In the log like any other message; nothing for the organization's other endpoint.
    const [message] = await logWhen(org, hook.id, (d) => d[0]?.status === 'succeeded', 'the test message to be recorded');
    expect(message).toMatchObject({ id: res.body.messageId, type: 'webhook.test', attempts: 1 });
    expect(await log(org, bystander.id)).toEqual([]);
    expect(receiver.on('/log/test-other')).toEqual([]);

    // A failing receiver: the answer shows the attempt, and the message waits for its retry.
    receiver.script('/log/test', { status: 500, headers: { 'retry-after': '3600' }, body: 'broken' });
    const failing = await api(org.admin).test(hook.id);
    expect(failing.status).toBe(200);
    expect(failing.body.attempt).toMatchObject({ statusCode: 500, responseBody: 'broken', error: null });
    expect((await api(org.viewer).detail(hook.id, failing.body.messageId as string)).body).toMatchObject({
      status: 'pending',
      error: { code: 'DELIVERY_FAILED', message: 'The receiver answered 500' },
    });

    expect((await api(org.admin).patch(bystander.id, { enabled: false })).status).toBe(200);
    expectError(await api(org.admin).test(bystander.id), 409, 'WEBHOOK_DISABLED');
  });

  it("answers 404 for another organization's endpoint or another endpoint's message", async () => {
    const org = await t.newOrg('team');
    const other = await t.newOrg('team');
    const hook = await endpoint(org, '/log/mine');
    const sibling = await endpoint(org, '/log/sibling', { eventTypes: ['agent.*'] });
    await publish(org, 'mine');
    const [message] = await logWhen(org, hook.id, (d) => d[0]?.status === 'succeeded', 'the message');

    const theirs = api(other.admin);
    expectError(await theirs.log(hook.id), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await theirs.detail(hook.id, message.id), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await theirs.redeliver(hook.id, message.id), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await theirs.recover(hook.id, { since: new Date(Date.now() - DAY_MS).toISOString() }), 404, 'WEBHOOK_NOT_FOUND');
    expectError(await theirs.test(hook.id), 404, 'WEBHOOK_NOT_FOUND');

    const mine = api(org.admin);
    expectError(await mine.detail(sibling.id, message.id), 404, 'WEBHOOK_MESSAGE_NOT_FOUND');
    expectError(await mine.redeliver(sibling.id, message.id), 404, 'WEBHOOK_MESSAGE_NOT_FOUND');
    expectError(await mine.detail(hook.id, '3f0c2a4e-8c1d-4b7e-9a51-0f6b2d1e7c11'), 404, 'WEBHOOK_MESSAGE_NOT_FOUND');
    expectError(await mine.detail(hook.id, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
    expect(receiver.on('/log/mine')).toHaveLength(1);
  });
});
