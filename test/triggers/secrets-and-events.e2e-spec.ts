import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { expectError } from '../support/envelope';
import { eventually } from '../support/eventually';
import { EVENT_KEYS, HookAnswer, isoString, LOOPBACK, SW_SECRET, TriggerEventDetail, UUID, triggerSpec } from './support';

/**
 * Inbound webhook triggers (issue 17, part 2), written from the contract: rotation of a trigger's
 * secret, the event log and replay. The helpers the trigger specs share are in ./support.
 */
describe('inbound webhook triggers', () => {
  const a = triggerSpec();
  const { t, org } = a;
  const { doubling, echo, created, read, patch, rotate, events, eventRes, replay, runsOf } = a;
  const { withBearer, withStandard, withHub, accepted, settled } = a;

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
      // The grace ends a second after the rotation: ask with the old token until it is refused
      // (each answer before that is a run of its own; nothing here counts them).
      let last: number | undefined;
      const refused = await eventually(
        async () => {
          const answer = await withBearer(trigger, { n: 2 });
          last = answer.status;
          return answer.status === 401 ? answer : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 200, message: () => `the old token to be refused (last answer ${String(last)})` },
      );
      expectError(refused, 401, 'UNAUTHORIZED');
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
      const headers = (detail.body as TriggerEventDetail).headers;
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
      expect(run.triggeredBy).toEqual({ type: 'webhook', id: trigger.id, eventId: replayed.eventId, person: org().member.id });
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
});
