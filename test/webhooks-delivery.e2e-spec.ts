import { TransactionHost } from '@nestjs-cls/transactional';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { EventOutbox } from '../src/shared/events/event-outbox';
import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

describe('webhook deliveries', () => {
  let t: TestApp;
  let receiver: Receiver;
  let org: TestOrg;
  let agentId: string;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('team');
    await install(t, org, 'transform');
    agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
  });

  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  async function endpoint(path: string, eventTypes = ['agent.execution.*'], owner = org): Promise<{ id: string; secret: string }> {
    const res = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(owner.admin))
      .send({ url: receiver.url(path), eventTypes });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, secret: res.body.secret as string };
  }

  async function execute(text: string, owner = org, agent = agentId): Promise<string> {
    const res = await t.http().post(`/api/agents/${agent}/execute?wait=30`).set(bearer(owner.admin)).send({ input: { text } });
    expect(res.status).toBe(200);
    return res.body.id as string;
  }

  const deliveriesOf = (path: string, executionId: string) =>
    receiver.on(path).filter((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === executionId);

  it('delivers a finished execution, signed so that the standardwebhooks package verifies it', async () => {
    const { secret } = await endpoint('/signed');
    const executionId = await execute('hello');

    const [delivery] = await eventually(() => (deliveriesOf('/signed', executionId).length ? deliveriesOf('/signed', executionId) : null), {
      message: 'the delivery',
    });
    const verified = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as Record<string, unknown>;
    expect(verified).toMatchObject({
      type: 'agent.execution.succeeded',
      data: {
        id: executionId,
        agentId,
        status: 'succeeded',
        output: 'HELLO',
        outputTruncated: false,
        links: { self: `/api/agents/${agentId}/history/${executionId}` },
      },
    });
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['user-agent']).toMatch(/^Platform-Webhooks/);
    expect(delivery.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);

    // One changed byte, or a timestamp six minutes old, no longer verifies.
    const tampered = delivery.body.replace('HELLO', 'HELLP');
    expect(() => new Webhook(secret).verify(tampered, delivery.headers as Record<string, string>)).toThrow();
    const stale = { ...delivery.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 360) } as unknown as Record<
      string,
      string
    >;
    expect(() => new Webhook(secret).verify(delivery.body, stale)).toThrow();
  });

  it('retries a failed delivery with the same webhook-id, honouring Retry-After', async () => {
    await endpoint('/flaky');
    receiver.script('/flaky', { status: 503, headers: { 'retry-after': '2' } });
    const executionId = await execute('retry me');

    const attempts = await eventually(
      () => (deliveriesOf('/flaky', executionId).length >= 2 ? deliveriesOf('/flaky', executionId) : null),
      {
        timeoutMs: 20_000,
        message: () =>
          `a second attempt (attempts so far at ${deliveriesOf('/flaky', executionId).map((d) => new Date(d.at).toISOString())})`,
      },
    );
    expect(attempts[1].headers['webhook-id']).toBe(attempts[0].headers['webhook-id']);
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(2000);
  });

  it('sends the messages waiting for a retry as soon as the endpoint answers again', async () => {
    const { id } = await endpoint('/recovering');
    receiver.script('/recovering', { status: 503, headers: { 'retry-after': '3600' } });
    const first = await execute('first');
    // The first message failed and waits an hour for its retry.
    const [waiting] = await eventually(
      async () => {
        const res = await t.http().get(`/api/webhooks/${id}/deliveries`).set(bearer(org.admin));
        const items = res.body.data as Array<{ status: string; attempts: number; nextAttemptAt: string | null }>;
        return items.length === 1 && items[0].nextAttemptAt ? items : null;
      },
      { timeoutMs: 20_000, message: 'the first message waiting for its retry' },
    );
    expect(waiting).toMatchObject({ status: 'pending', attempts: 1 });
    expect(Date.parse(waiting.nextAttemptAt!) - Date.now()).toBeGreaterThan(30 * 60_000);

    const second = await execute('second');
    const retried = await eventually(() => (deliveriesOf('/recovering', first).length >= 2 ? deliveriesOf('/recovering', first) : null), {
      timeoutMs: 20_000,
      message: 'the waiting message sent once the endpoint answered again',
    });
    expect(retried[1].headers['webhook-id']).toBe(retried[0].headers['webhook-id']);
    expect(deliveriesOf('/recovering', second)).toHaveLength(1);
    const res = await t.http().get(`/api/webhooks/${id}/deliveries?status=succeeded`).set(bearer(org.admin));
    expect(res.body.data).toHaveLength(2);
  });

  it('treats a redirect as a failure and never fetches its Location', async () => {
    const moved = await endpoint('/moved');
    const redirect = { status: 302, headers: { location: receiver.url('/elsewhere') } };
    receiver.script('/moved', redirect, redirect, redirect);
    const executionId = await execute('moved');
    const row = await eventually(
      async () => {
        const [found] = await t.app
          .get(DataSource)
          .query<Array<{ status: string; error: { message: string } | null }>>(
            `SELECT status, error FROM webhook_messages WHERE endpoint_id = $1 AND payload LIKE $2`,
            [moved.id, `%${executionId}%`],
          );
        return found?.error ? found : null;
      },
      { message: 'the failed attempt to be recorded' },
    );
    // Waiting for its next attempt, and the redirect's Location was never asked for.
    expect(row).toEqual({ status: 'queued', error: { code: 'DELIVERY_FAILED', message: 'The receiver answered 302' } });
    expect(deliveriesOf('/moved', executionId)).toHaveLength(1);
    expect(receiver.on('/elsewhere')).toEqual([]);
  });

  it('disables an endpoint that answers 410, and keeps later messages to it as skipped', async () => {
    const gone = await endpoint('/gone');
    receiver.script('/gone', { status: 410 });
    const first = await execute('first');
    await eventually(() => deliveriesOf('/gone', first).length > 0, { message: 'the 410' });
    const disabled = await eventually(
      async () => {
        const res = await t.http().get(`/api/webhooks/${gone.id}`).set(bearer(org.viewer));
        return res.body.enabled === false ? res.body : null;
      },
      { message: 'the endpoint to be disabled' },
    );
    expect(disabled.disabledReason).toBe('The receiver answered 410 Gone');

    const second = await execute('second');
    const rows = await eventually(
      async () => {
        const found = await t.app
          .get(DataSource)
          .query<Array<{ status: string }>>(`SELECT status FROM webhook_messages WHERE endpoint_id = $1 AND payload LIKE $2`, [
            gone.id,
            `%${second}%`,
          ]);
        return found.length ? found : null;
      },
      { message: 'the skipped message' },
    );
    expect(rows).toEqual([{ status: 'skipped' }]);
    expect(deliveriesOf('/gone', second)).toEqual([]);
  });

  it("never sends one organization's events to another's endpoint", async () => {
    const other = await t.newOrg('team');
    await install(t, other, 'transform');
    const otherAgent = await registerAgent(t, other, { kind: 'transform.jsonata', config: { expression: 'text' } });
    await endpoint('/mine');
    const theirs = await execute('theirs', other, otherAgent);
    const mine = await execute('mine');
    await eventually(() => deliveriesOf('/mine', mine).length > 0, { message: 'my delivery' });
    expect(deliveriesOf('/mine', theirs)).toEqual([]);
  });

  it('writes no message when the transaction that raised the event rolls back', async () => {
    const rolledBack = await endpoint('/rollback', ['plugin.*']);
    const outbox = t.app.get(EventOutbox);
    await expect(
      t.app.get(TransactionHost).withTransaction(async () => {
        await outbox.publish([{ organizationId: org.id, type: 'plugin.installed', data: { slug: 'nothing' } }]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const rows = await t.app.get(DataSource).query(`SELECT id FROM webhook_messages WHERE endpoint_id = $1`, [rolledBack.id]);
    expect(rows).toEqual([]);

    // The same publish, committed, delivers.
    await t.app
      .get(TransactionHost)
      .withTransaction(() => outbox.publish([{ organizationId: org.id, type: 'plugin.installed', data: { slug: 'committed' } }]));
    await eventually(() => receiver.on('/rollback').some((r) => r.body.includes('"committed"')), { message: 'the committed event' });
    expect(receiver.on('/rollback').some((r) => r.body.includes('"nothing"'))).toBe(false);
  });
});
