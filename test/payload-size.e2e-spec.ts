import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

const MIB = 1024 * 1024;

/** Printable ASCII, quote and backslash included: JSON escapes them on every hop. */
const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
/** Two-, three- and four-byte UTF-8 characters (é, ß, 東, 京, 😀, א). */
const NON_ASCII = ['é', 'ß', '東', '京', '😀', 'א', 'Ω', 'ñ'];

/** mulberry32: the same pseudo-random sequence on every run, so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An input of 1 MiB and more as JSON: a string of 1,048,576 pseudo-random printable characters
 * (so compression cannot hide a mistake), non-ASCII text, and some nesting of every JSON type.
 */
function largeInput(): Record<string, unknown> {
  const next = random(20260101);
  const pick = (alphabet: string | string[], n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
  return {
    text: pick(PRINTABLE, MIB),
    unicode: pick(NON_ASCII, 4096),
    nested: {
      id: 42,
      ratio: 0.125,
      negative: -7,
      flags: [true, false, null],
      items: Array.from({ length: 50 }, (_, i) => ({ i, word: pick(PRINTABLE, 16), note: pick(NON_ASCII, 8) })),
      deeper: { a: { b: { c: { d: ['e', { f: 'Grüße aus Köln, 東京から' }] } } } },
    },
  };
}

/** JSON with its keys sorted: jsonb keeps no key order, so equal values have equal canonical text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

const sha256 = (value: unknown) => createHash('sha256').update(canonical(value)).digest('hex');

/** Passes when `actual` is the same JSON value as `expected`, compared as canonical text and not as a 2 MB diff. */
function expectSame(actual: unknown, expected: unknown, what: string): void {
  expect({ what, sha256: sha256(actual) }).toEqual({ what, sha256: sha256(expected) });
}

describe('payload size: a 1 MiB input round trips unchanged', () => {
  let t: TestApp;
  let org: TestOrg;
  let receiver: Receiver;
  let agentId: string;
  let workflowId: string;
  let hook: { id: string; secret: string };
  const input = largeInput();

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    // Team: webhooks are a team feature; no tier limits the size of an input.
    org = await t.newOrg('team');
    await install(t, org, 'transform');
    agentId = await registerAgent(t, org, { name: 'echo', kind: 'transform.jsonata', config: { expression: '$' } });
    const workflow = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'echo', steps: [{ id: 'echo', action: 'transform.jsonata', with: { expression: '$' } }] });
    expect(workflow.status).toBe(201);
    workflowId = workflow.body.id as string;
    const endpoint = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: receiver.url('/large'), eventTypes: ['agent.execution.succeeded', 'workflow.run.succeeded'] });
    expect(endpoint.status).toBe(201);
    hook = { id: endpoint.body.id as string, secret: endpoint.body.secret as string };
  }, 60_000);

  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('builds an input over 1 MiB as JSON, which the 1 MiB limit of other bodies would refuse', () => {
    const bytes = Buffer.byteLength(JSON.stringify({ input }));
    expect(bytes).toBeGreaterThan(MIB);
    expect(bytes).toBeLessThan(2 * MIB);
  });

  /** The delivery of the event about `id`, verified with the endpoint's secret, and its raw size. */
  async function delivered(id: string): Promise<{ data: Record<string, unknown>; bytes: number; type: string }> {
    const received = await eventually(
      () => receiver.on('/large').find((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === id),
      { timeoutMs: 30_000, message: `the delivery of ${id}` },
    );
    const body = new Webhook(hook.secret).verify(received.body, received.headers as Record<string, string>) as {
      type: string;
      data: Record<string, unknown>;
    };
    return { data: body.data, bytes: Buffer.byteLength(received.body), type: body.type };
  }

  it('through an agent: execute, the execution by id, both history lists and the webhook', async () => {
    const executed = await t.http().post(`/api/agents/${agentId}/execute?wait=60`).set(bearer(org.member)).send({ input });
    expect({ status: executed.status, state: executed.body.status as unknown }).toEqual({ status: 200, state: 'succeeded' });
    const id = executed.body.id as string;
    expectSame(executed.body.input, input, 'execute: input');
    expectSame(executed.body.output, input, 'execute: output ($ over the input)');
    expect((executed.body.output as { text: string }).text).toBe(input.text);

    const one = await t.http().get(`/api/agents/${agentId}/history/${id}`).set(bearer(org.viewer));
    expect(one.status).toBe(200);
    expectSame(one.body.input, input, 'GET execution: input');
    expectSame(one.body.output, input, 'GET execution: output');

    // The history lists show input and output (their documented shape): the item comes whole.
    const history = await t.http().get(`/api/agents/${agentId}/history?limit=5`).set(bearer(org.viewer));
    const listed = (history.body.data as Array<{ id: string; input: unknown; output: unknown }>).find((e) => e.id === id);
    expectSame(listed?.input, input, 'agent history: input');
    expectSame(listed?.output, input, 'agent history: output');
    const across = await t.http().get(`/api/executions?limit=5`).set(bearer(org.viewer));
    expectSame(
      (across.body.data as Array<{ id: string; input: unknown }>).find((e) => e.id === id)?.input,
      input,
      '/api/executions: input',
    );

    // The event's data carries the input whole; an output over 64 KiB is left out (outputTruncated), to be read by links.self.
    const { data, bytes, type } = await delivered(id);
    expect(type).toBe('agent.execution.succeeded');
    expect(bytes).toBeGreaterThan(MIB);
    expectSame(data.input, input, 'webhook: input');
    expect(data).toMatchObject({
      status: 'succeeded',
      output: null,
      outputTruncated: true,
      links: { self: `/api/agents/${agentId}/history/${id}` },
    });
  }, 90_000);

  it('through a workflow: run, the run by id, the runs list, the webhook and the delivery log', async () => {
    const ran = await t.http().post(`/api/workflows/${workflowId}/run?wait=60`).set(bearer(org.member)).send({ input });
    expect({ status: ran.status, state: ran.body.status as unknown }).toEqual({ status: 200, state: 'succeeded' });
    const id = ran.body.id as string;
    expectSame(ran.body.input, input, 'run: input');
    expectSame(ran.body.output, { echo: input }, 'run: output (every step by id)');
    const [step] = ran.body.steps as Array<{ id: string; input: unknown; output: unknown }>;
    expectSame(step.input, input, 'run: the step input');
    expectSame(step.output, input, 'run: the step output');

    const one = await t.http().get(`/api/workflows/${workflowId}/runs/${id}`).set(bearer(org.viewer));
    expect(one.status).toBe(200);
    expectSame(one.body.input, input, 'GET run: input');
    expectSame(one.body.output, { echo: input }, 'GET run: output');
    expect((one.body.input as { text: string }).text).toBe(input.text);

    const runs = await t.http().get(`/api/workflows/${workflowId}/runs?limit=5`).set(bearer(org.viewer));
    const listed = (runs.body.data as Array<{ id: string; input: unknown; output: unknown; steps?: unknown }>).find((r) => r.id === id);
    expect(listed).toBeDefined();
    expect(listed!.steps).toBeUndefined();
    expectSame(listed!.input, input, 'runs list: input');
    expectSame(listed!.output, { echo: input }, 'runs list: output');

    const { data, bytes, type } = await delivered(id);
    expect(type).toBe('workflow.run.succeeded');
    expect(bytes).toBeGreaterThan(MIB);
    expectSame(data.input, input, 'webhook: input');
    expect(data).toMatchObject({ status: 'succeeded', output: null, outputTruncated: true });

    // The delivery log lists messages without their payloads; one message's GET has it whole.
    const log = await eventually(
      async () => {
        const res = await t.http().get(`/api/webhooks/${hook.id}/deliveries?status=succeeded`).set(bearer(org.admin));
        const messages = res.body.data as Array<{ id: string; type: string; payload?: unknown }>;
        return messages.some((m) => m.type === 'workflow.run.succeeded') ? messages : null;
      },
      { message: 'the delivery in the log' },
    );
    expect(log.every((m) => m.payload === undefined)).toBe(true);
    const message = log.find((m) => m.type === 'workflow.run.succeeded')!;
    const detail = await t.http().get(`/api/webhooks/${hook.id}/deliveries/${message.id}`).set(bearer(org.admin));
    expectSame((detail.body.payload as { data: { input: unknown } }).data.input, input, 'delivery log: payload');
  }, 90_000);

  it('refuses a body over 2 MiB on execute and run, and over 1 MiB elsewhere, with 413 in the envelope', async () => {
    const tooLarge = { input: { text: 'x'.repeat(2 * MIB) } };
    const execute = await t.http().post(`/api/agents/${agentId}/execute?wait=0`).set(bearer(org.member)).send(tooLarge);
    expectError(execute, 413, 'PAYLOAD_TOO_LARGE');
    expect(execute.body.error.message).toBe('The body is larger than 2 MiB');
    const run = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send(tooLarge);
    expectError(run, 413, 'PAYLOAD_TOO_LARGE');

    // Any other route keeps 1 MiB: the same input that execute takes is too large for a workflow definition.
    const define = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'too large', description: input.text, steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }] });
    expectError(define, 413, 'PAYLOAD_TOO_LARGE');
    expect(define.body.error.message).toBe('The body is larger than 1 MiB');
  }, 60_000);
});
