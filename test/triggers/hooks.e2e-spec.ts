import { createHmac, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { expectError } from '../support/envelope';
import { bearer } from '../support/test-app';
import {
  hmac,
  hubSignature,
  isoString,
  jsonata,
  LOOPBACK,
  MIB,
  standardSigned,
  TriggerWithSecret,
  UUID,
  whsec,
  triggerSpec,
} from './support';

/**
 * Inbound webhook triggers (issue 17, part 2), written from the contract: the public hook
 * POST /api/hooks/:triggerId, driven the way a sender would: Standard Webhooks signed with the
 * reference `standardwebhooks` library, GitHub's X-Hub-Signature-256, a bearer token; the bodies
 * and their mapping to the run input, sync mode, what it answers for an unknown trigger or a body
 * too large, and tenant isolation at the hook. The helpers the trigger specs share are in ./support.
 */
describe('inbound webhook triggers', () => {
  const a = triggerSpec();
  const { t, org, other } = a;
  const { doubling, echo, create, created, read, list, patch, remove, events, eventRes, runsOf, hook } = a;
  const { withBearer, withStandard, withHub, accepted, settled, runOf } = a;

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

    it('dedupes on the signature by default: a captured delivery sent again with any Idempotency-Key is the same run', async () => {
      const workflowId = await echo();
      const trigger = await created(workflowId, { scheme: 'hmac-sha256' });
      expect(trigger.dedupe).toBe('signature');
      const payload = JSON.stringify({ ref: 'refs/heads/main', n: 1 });
      const signature = hubSignature(trigger.secret, payload);
      const first = accepted(await hook(trigger, payload, { 'X-Hub-Signature-256': signature, 'Idempotency-Key': randomUUID() }), trigger);
      const replays: Array<Record<string, string>> = [{ 'Idempotency-Key': randomUUID() }, { 'Idempotency-Key': randomUUID() }, {}];
      for (const headers of replays) {
        const replayed = await hook(trigger, payload, { 'X-Hub-Signature-256': signature, ...headers });
        expect({ status: replayed.status, body: replayed.body as unknown }).toEqual({
          status: 202,
          body: { eventId: first.eventId, runId: first.runId, status: expect.any(String), duplicate: true },
        });
      }
      // Another body is another delivery.
      const other = JSON.stringify({ ref: 'refs/heads/main', n: 2 });
      const second = accepted(await hook(trigger, other, { 'X-Hub-Signature-256': hubSignature(trigger.secret, other) }), trigger);
      expect((await runsOf(workflowId)).map((r) => r.id).sort()).toEqual([first.runId, second.runId].sort());
      expect((await events(trigger)).find((e) => e.id === first.eventId)).toMatchObject({ dedupeKey: signature });
    });

    it('keeps an explicit dedupe: idempotency-key and none start a run for each request of one body', async () => {
      for (const dedupe of ['idempotency-key', 'none']) {
        const workflowId = await echo();
        const trigger = await created(workflowId, { scheme: 'hmac-sha256', dedupe });
        expect(trigger.dedupe).toBe(dedupe);
        const payload = JSON.stringify({ n: 1 });
        const signed = { 'X-Hub-Signature-256': hubSignature(trigger.secret, payload) };
        const a = accepted(await hook(trigger, payload, { ...signed, 'Idempotency-Key': randomUUID() }), trigger);
        const b = accepted(await hook(trigger, payload, { ...signed, 'Idempotency-Key': randomUUID() }), trigger);
        expect(a.runId).not.toBe(b.runId);
      }
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
