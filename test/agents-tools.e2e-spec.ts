import type { AddressInfo } from 'node:net';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { openEventStream } from './support/event-stream';
import { answer, FakeLlm, LlmReply, sentBody, startFakeLlm, streamed, toolCalls } from './support/fake-llm';
import { RecordedRequest } from './support/loopback-server';
import { bearer, createTestApp, scrapeMetrics, TestApp, TestOrg } from './support/test-app';

jest.setTimeout(60_000);

const SYSTEM = 'You are a careful assistant.';
const TEXT = { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string' } } };
/** An action tool: `{text}` -> `{shout: TEXT}`. */
const SHOUT = { action: 'transform.jsonata', with: { expression: '{"shout": $uppercase(text)}' }, parameters: TEXT };
const SHOUT_SPEC = {
  type: 'function',
  function: {
    name: 'transform_jsonata',
    description: 'Evaluates a JSONata expression over the input; the result is the output.',
    parameters: TEXT,
  },
};
const N = { type: 'object', additionalProperties: false, required: ['n'], properties: { n: { type: 'integer' } } };
const INCHES = { type: 'object', required: ['inches'], properties: { inches: { type: 'number' } } };

/** The value of the sample with exactly these labels, 0 when /metrics has none. */
function sample(scrape: string, name: string, labels: Record<string, string>): number {
  for (const [, series, body, value] of scrape.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/gm)) {
    if (series !== name) continue;
    const found = Object.fromEntries([...(body ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k, v]));
    if (Object.keys(found).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => found[k] === v))
      return Number(value);
  }
  return 0;
}

/**
 * `llm.agent` as a user sees it: agents that call tools (plugin actions, other agents,
 * workflows) in a loop against an OpenAI-compatible server (a scripted fake on 127.0.0.1),
 * their bounds, their transcripts and their live events.
 */
describe('agents that call tools (llm.agent)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let llm: FakeLlm;
  let base: string;
  let doubleIt: string;

  beforeAll(async () => {
    llm = await startFakeLlm();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    [org, other] = await Promise.all([t.newOrg('enterprise'), t.newOrg('enterprise')]);
    for (const o of [org, other]) {
      await install(t, o, 'transform');
      await install(t, o, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'test-model' });
    }
    doubleIt = await defineWorkflow(org, 'Double it');
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });

  /** A workflow `{n}` -> 2n: one transform step. */
  async function defineWorkflow(as: TestOrg, name: string): Promise<string> {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(as.admin))
      .send({
        name,
        inputSchema: N,
        steps: [{ id: 'double', action: 'transform.jsonata', with: { expression: '$ * 2' }, input: 'input.n' }],
        output: 'steps.double.output',
      });
    if (res.status !== 201) throw new Error(`define workflow: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  }

  const createAgent = (body: Record<string, unknown>, as: TestOrg = org) => t.http().post('/api/agents').set(bearer(as.admin)).send(body);
  const toolAgent = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    registerAgent(t, org, { name: 'assistant', kind: 'llm.agent', config: { systemPrompt: SYSTEM, ...config }, maxAttempts: 1, ...extra });
  const execute = (agentId: string, input: unknown) =>
    t.http().post(`/api/agents/${agentId}/execute?wait=15`).set(bearer(org.member)).send({ input });
  const detail = async (agentId: string, executionId: string) => {
    const res = await t.http().get(`/api/agents/${agentId}/history/${executionId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown> & { conversation: { turns: number; toolCalls: number; transcript: { data: Turn[] } } };
  };

  /** Runs `work` and answers the chat-completions requests the fake received meanwhile. */
  async function asked<T>(work: () => Promise<T>): Promise<{ result: T; requests: RecordedRequest[] }> {
    const from = llm.requests.length;
    const result = await work();
    return { result, requests: llm.requests.slice(from) };
  }
  /** The messages of a request, as sent. */
  const messagesOf = (request: RecordedRequest) => sentBody(request).messages as unknown as Message[];

  interface Message {
    role: string;
    content: string | null;
    tool_call_id?: string;
    tool_calls?: unknown[];
  }
  interface Turn {
    turn: number;
    content: string | null;
    toolCallsRequested: Array<{ id: string; name: string; arguments: string }>;
    repair: string | null;
    toolCalls: Array<Record<string, unknown>>;
  }

  describe('a conversation', () => {
    it('calls an action, then a workflow, then answers; the model reads each output under its call id', async () => {
      const agent = await toolAgent({
        promptTemplate: 'Shout {{word}}, then double {{n}}.',
        tools: [SHOUT, { workflow: doubleIt }],
      });
      const tokensBefore = sample((await scrapeMetrics(t)).text, 'llm_tokens_total', {
        organization: org.id,
        model: 'served-model',
        kind: 'prompt',
      });
      llm.script(
        toolCalls([{ id: 'call_shout', name: 'transform_jsonata', arguments: { text: 'hello' } }]),
        toolCalls([{ id: 'call_double', name: 'workflow_double_it', arguments: { n: 21 } }], {
          prompt_tokens: 30,
          completion_tokens: 8,
          total_tokens: 38,
        }),
        answer('HELLO, and 42'),
      );

      const { result: res, requests } = await asked(() => execute(agent, { word: 'hello', n: 21 }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'succeeded',
        output: {
          text: 'HELLO, and 42',
          usage: { promptTokens: 54, completionTokens: 18, totalTokens: 72 },
          turns: 3,
          toolCalls: 2,
          model: 'served-model',
        },
        error: null,
      });

      // What the model was sent: streamed requests with the tools, then the conversation so far.
      expect(requests).toHaveLength(3);
      const first = sentBody(requests[0]);
      expect(first).toMatchObject({ model: 'test-model', stream: true });
      expect(first.tools).toEqual([
        SHOUT_SPEC,
        { type: 'function', function: { name: 'workflow_double_it', description: "Workflow 'Double it'", parameters: N } },
      ]);
      expect(sentBody(requests[2]).tools).toEqual(first.tools);
      const opening = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Shout hello, then double 21.' },
      ];
      expect(first.messages).toEqual(opening);
      const afterShout = [
        ...opening,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_shout', type: 'function', function: { name: 'transform_jsonata', arguments: '{"text":"hello"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_shout', content: '{"shout":"HELLO"}' },
      ];
      expect(messagesOf(requests[1])).toEqual(afterShout);
      expect(messagesOf(requests[2])).toEqual([
        ...afterShout,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_double', type: 'function', function: { name: 'workflow_double_it', arguments: '{"n":21}' } }],
        },
        { role: 'tool', tool_call_id: 'call_double', content: '42' },
      ]);

      // The transcript: three turns, each call with its arguments and whole output.
      const executionId = res.body.id as string;
      const body = await detail(agent, executionId);
      expect(body.conversation).toEqual({
        turns: 3,
        toolCalls: 2,
        usage: { promptTokens: 54, completionTokens: 18, totalTokens: 72 },
        transcript: { data: expect.any(Array), nextCursor: null },
      });
      const turns = body.conversation.transcript.data;
      expect(turns.map((turn) => turn.turn)).toEqual([1, 2, 3]);
      expect(turns[0]).toEqual({
        turn: 1,
        model: 'served-model',
        content: null,
        toolCallsRequested: [{ id: 'call_shout', name: 'transform_jsonata', arguments: '{"text":"hello"}' }],
        usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
        finishReason: 'tool_calls',
        repair: null,
        toolCalls: [
          {
            callId: 'call_shout',
            name: 'transform_jsonata',
            arguments: { text: 'hello' },
            status: 'succeeded',
            output: { shout: 'HELLO' },
            error: null,
            startedAt: expect.any(String),
            finishedAt: expect.any(String),
          },
        ],
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
      });
      expect(turns[1].toolCalls).toEqual([
        expect.objectContaining({
          callId: 'call_double',
          name: 'workflow_double_it',
          arguments: { n: 21 },
          status: 'succeeded',
          output: 42,
        }),
      ]);
      expect(turns[2]).toMatchObject({ content: 'HELLO, and 42', toolCallsRequested: [], toolCalls: [], finishReason: 'stop' });

      // Paged: two turns, then the last.
      const page = await t.http().get(`/api/agents/${agent}/history/${executionId}/transcript?limit=2`).set(bearer(org.viewer));
      expect(page.status).toBe(200);
      expect(page.body.data.map((turn: Turn) => turn.turn)).toEqual([1, 2]);
      expect(page.body.nextCursor).toEqual(expect.any(String));
      const rest = await t
        .http()
        .get(`/api/agents/${agent}/history/${executionId}/transcript?limit=2&cursor=${encodeURIComponent(page.body.nextCursor as string)}`)
        .set(bearer(org.viewer));
      expect(rest.body).toEqual({ data: [turns[2]], nextCursor: null });

      // The workflow ran once, started by the execution.
      const runs = await t.http().get(`/api/workflows/${doubleIt}/runs`).set(bearer(org.viewer));
      expect(runs.body.data).toEqual([
        expect.objectContaining({ status: 'succeeded', output: 42, triggeredBy: { type: 'agent_execution', id: executionId, person: org.member.id } }),
      ]);

      // Tokens by organization and model.
      const scrape = (await scrapeMetrics(t)).text;
      expect(sample(scrape, 'llm_tokens_total', { organization: org.id, model: 'served-model', kind: 'prompt' }) - tokensBefore).toBe(54);
      expect(
        sample(scrape, 'llm_tokens_total', { organization: org.id, model: 'served-model', kind: 'completion' }),
      ).toBeGreaterThanOrEqual(18);
    });

    it('runs parallel calls of one turn (streamed, arguments in pieces) and sends their outputs back in order', async () => {
      const agent = await toolAgent({ tools: [SHOUT] });
      llm.script(
        streamed(
          {
            toolCalls: [
              { id: 'call_a', name: 'transform_jsonata', arguments: { text: 'first one' } },
              { id: 'call_b', name: 'transform_jsonata', arguments: { text: 'second one' } },
            ],
          },
          { pieces: 4 },
        ),
        streamed({ content: 'FIRST ONE and SECOND ONE' }),
      );

      const { result: res, requests } = await asked(() => execute(agent, 'Shout both'));
      expect(res.body).toMatchObject({ status: 'succeeded', output: { text: 'FIRST ONE and SECOND ONE', turns: 2, toolCalls: 2 } });
      expect(requests).toHaveLength(2);
      expect(messagesOf(requests[0])).toEqual([
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Shout both' },
      ]);
      expect(messagesOf(requests[1]).slice(2)).toEqual([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'transform_jsonata', arguments: '{"text":"first one"}' } },
            { id: 'call_b', type: 'function', function: { name: 'transform_jsonata', arguments: '{"text":"second one"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '{"shout":"FIRST ONE"}' },
        { role: 'tool', tool_call_id: 'call_b', content: '{"shout":"SECOND ONE"}' },
      ]);
      const [turn] = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(turn.toolCalls.map((call) => [call.callId, call.status, call.output])).toEqual([
        ['call_a', 'succeeded', { shout: 'FIRST ONE' }],
        ['call_b', 'succeeded', { shout: 'SECOND ONE' }],
      ]);
    });

    it('tells the model of bad arguments and unknown tools, and goes on with the calls it repairs', async () => {
      const agent = await toolAgent({ tools: [SHOUT] });
      llm.script(
        toolCalls([
          { id: 'call_schema', name: 'transform_jsonata', arguments: { txt: 'x' } },
          { id: 'call_json', name: 'transform_jsonata', arguments: '{"text": "x"' },
          { id: 'call_ghost', name: 'no_such_tool', arguments: {} },
        ]),
        toolCalls([{ id: 'call_fixed', name: 'transform_jsonata', arguments: { text: 'x' } }]),
        answer('X'),
      );

      const { result: res, requests } = await asked(() => execute(agent, { word: 'x' }));
      expect(res.body).toMatchObject({ status: 'succeeded', output: { text: 'X', turns: 3, toolCalls: 4 } });
      expect(messagesOf(requests[0])[1]).toEqual({ role: 'user', content: '{"word":"x"}' });

      const toolMessages = messagesOf(requests[1]).filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => [m.tool_call_id, JSON.parse(m.content as string)])).toEqual([
        ['call_schema', { error: { code: 'INVALID_ARGUMENTS', message: expect.stringContaining('text') } }],
        ['call_json', { error: { code: 'INVALID_ARGUMENTS', message: expect.stringContaining('not JSON') } }],
        ['call_ghost', { error: { code: 'TOOL_NOT_FOUND', message: expect.any(String) } }],
      ]);
      expect(messagesOf(requests[2]).at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_fixed', content: '{"shout":"X"}' });

      const [first, second] = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(
        first.toolCalls.map((call) => [call.callId, call.arguments, call.status, call.output, (call.error as { code: string }).code]),
      ).toEqual([
        ['call_schema', { txt: 'x' }, 'failed', null, 'INVALID_ARGUMENTS'],
        ['call_json', '{"text": "x"', 'failed', null, 'INVALID_ARGUMENTS'],
        ['call_ghost', {}, 'failed', null, 'TOOL_NOT_FOUND'],
      ]);
      expect(second.toolCalls).toEqual([expect.objectContaining({ callId: 'call_fixed', status: 'succeeded', output: { shout: 'X' } })]);
    });

    it('cuts a long output for the model with a marker, and keeps it whole in the transcript', async () => {
      const agent = await toolAgent({
        tools: [
          {
            action: 'transform.jsonata',
            with: { expression: '{"pad": $pad("", 20000, "x")}' },
            name: 'pad',
            parameters: { type: 'object' },
          },
        ],
      });
      llm.script(toolCalls([{ id: 'call_pad', name: 'pad', arguments: {} }]), answer('padded'));

      const { result: res, requests } = await asked(() => execute(agent, {}));
      expect(res.body).toMatchObject({ status: 'succeeded', output: { text: 'padded' } });
      const whole = JSON.stringify({ pad: 'x'.repeat(20_000) });
      const sent = messagesOf(requests[1]).at(-1)!;
      expect(sent).toMatchObject({ role: 'tool', tool_call_id: 'call_pad' });
      const content = sent.content as string;
      expect(content.startsWith(whole.slice(0, 16_384))).toBe(true);
      expect(content.slice(16_384)).toMatch(/^\n\[truncated: .*\]$/);
      const [turn] = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(turn.toolCalls[0].output).toEqual({ pad: 'x'.repeat(20_000) });
    });
  });

  describe('bounds', () => {
    it('fails with AGENT_TURN_LIMIT when the last turn maxTurns allows asks for tools, without running them', async () => {
      const agent = await toolAgent({ tools: [SHOUT], maxTurns: 2 });
      const again = (id: string) => toolCalls([{ id, name: 'transform_jsonata', arguments: { text: id } }]);
      llm.script(again('call_1'), again('call_2'), again('call_3'));

      const { result: res, requests } = await asked(() => execute(agent, 'loop'));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'failed', output: null, error: { code: 'AGENT_TURN_LIMIT' } });
      expect(requests).toHaveLength(2);
      const body = await detail(agent, res.body.id as string);
      expect(body.conversation).toMatchObject({ turns: 2, toolCalls: 1 });
      const turns = body.conversation.transcript.data;
      expect(turns.map((turn) => [turn.turn, turn.toolCallsRequested.map((c) => c.id), turn.toolCalls.map((c) => c.status)])).toEqual([
        [1, ['call_1'], ['succeeded']],
        [2, ['call_2'], []],
      ]);
      llm.script();
    });

    it('fails with AGENT_TOKEN_LIMIT once the turns used more than maxTokens', async () => {
      // 17 tokens a turn: the first turn fits in 30, the second goes past it.
      const agent = await toolAgent({ tools: [SHOUT], maxTokens: 30 });
      const again = (id: string) => toolCalls([{ id, name: 'transform_jsonata', arguments: { text: id } }]);
      llm.script(again('call_1'), again('call_2'), again('call_3'));

      const { result: res, requests } = await asked(() => execute(agent, 'loop'));
      expect(res.body).toMatchObject({ status: 'failed', error: { code: 'AGENT_TOKEN_LIMIT', message: expect.stringContaining('34') } });
      expect(requests).toHaveLength(2);
      const turns = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(turns.map((turn) => turn.toolCalls.length)).toEqual([1, 0]);
      llm.script();
    });
  });

  describe('schemas the organization writes', () => {
    it('checks arguments and answers against them in linear time: a pattern that backtracks is no way to stall a worker', async () => {
      // On a backtracking engine `^(a+)+$` takes minutes over 40 a's and a '!'; on the tenant validator, no time at all.
      const EVIL = { type: 'object', properties: { text: { type: 'string', pattern: '^(a+)+$' } } };
      const agent = await toolAgent(
        {
          tools: [{ ...SHOUT, parameters: EVIL }],
          output: { schema: { type: 'object', properties: { word: { type: 'string', pattern: '^(a+)+$' } } } },
        },
        { timeoutMs: 10_000 },
      );
      const evil = `${'a'.repeat(40)}!`;
      llm.script(
        toolCalls([{ id: 'call_evil', name: 'transform_jsonata', arguments: { text: evil } }]),
        answer(JSON.stringify({ word: evil })),
        answer(JSON.stringify({ word: 'aaa' })),
      );

      const { result: res } = await asked(() => execute(agent, 'try'));
      expect(res.body).toMatchObject({ status: 'succeeded', output: { json: { word: 'aaa' }, turns: 3 } });
      const turns = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(turns[0].toolCalls).toEqual([
        expect.objectContaining({ status: 'failed', error: expect.objectContaining({ code: 'INVALID_ARGUMENTS' }) }),
      ]);
      expect(turns[1].repair).toContain('answer.word');
    });
  });

  describe('output.schema', () => {
    const ANSWER = { type: 'object', required: ['answer'], properties: { answer: { type: 'integer' } } };

    it('asks once for a repair of an answer that does not match, and answers the repaired JSON', async () => {
      const agent = await toolAgent({ output: { schema: ANSWER } });
      llm.script(answer('forty-two'), answer('```json\n{"answer": 42}\n```'));

      const { result: res, requests } = await asked(() => execute(agent, 'What is six times seven?'));
      expect(res.body).toMatchObject({
        status: 'succeeded',
        output: { json: { answer: 42 }, turns: 2, toolCalls: 0, usage: { totalTokens: 34 }, model: 'served-model' },
      });
      expect(res.body.output).not.toHaveProperty('text');
      expect(requests).toHaveLength(2);
      const [system, user, said, repair] = messagesOf(requests[1]);
      expect(system).toEqual({ role: 'system', content: expect.stringContaining(JSON.stringify(ANSWER)) });
      expect((system.content as string).startsWith(SYSTEM)).toBe(true);
      expect(user).toEqual({ role: 'user', content: 'What is six times seven?' });
      expect(said).toEqual({ role: 'assistant', content: 'forty-two' });
      expect(repair).toEqual({ role: 'user', content: expect.stringContaining('JSON Schema') });

      const turns = (await detail(agent, res.body.id as string)).conversation.transcript.data;
      expect(turns.map((turn) => turn.repair)).toEqual([repair.content, null]);
    });

    it('fails with INVALID_OUTPUT when the repaired answer does not match either', async () => {
      const agent = await toolAgent({ output: { schema: ANSWER } });
      llm.script(answer('forty-two'), answer('{"answer": "42"}'), answer('{"answer": 42}'));

      const { result: res, requests } = await asked(() => execute(agent, 'What is six times seven?'));
      expect(res.body).toMatchObject({ status: 'failed', output: null, error: { code: 'INVALID_OUTPUT' } });
      expect(requests).toHaveLength(2);
      llm.script();
    });
  });

  describe('live events', () => {
    it('streams a whole conversation from execute: state, turns, tools, the text as it comes, then the final execution', async () => {
      const agent = await toolAgent({ tools: [SHOUT] });
      // The first reply waits for the stream to be open, so no delta goes out before it.
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      const held =
        (reply: LlmReply): LlmReply =>
        (req, res) =>
          void opened.then(() => reply(req, res));
      const text = 'Both are shouted: HI and HO.';
      llm.script(
        held(
          streamed({
            toolCalls: [
              { id: 'call_hi', name: 'transform_jsonata', arguments: { text: 'hi' } },
              { id: 'call_ho', name: 'transform_jsonata', arguments: { text: 'ho' } },
            ],
          }),
        ),
        streamed({ content: text }, { pieces: 5 }),
      );

      const stream = await openEventStream(
        `${base}/api/agents/${agent}/execute`,
        { ...bearer(org.member), 'content-type': 'application/json' },
        { method: 'POST', body: JSON.stringify({ input: 'Shout hi and ho' }) },
      );
      expect({ status: stream.status, contentType: stream.contentType }).toEqual({
        status: 200,
        contentType: 'text/event-stream; charset=utf-8',
      });
      await stream.until((e) => e.event === 'state');
      open();
      const events = await stream.ended;

      expect(events[0].event).toBe('state');
      const final = events.at(-1)!;
      expect(final).toMatchObject({ event: 'execution', data: { status: 'succeeded', error: null } });
      const deltas = events.filter((e) => e.event === 'delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.every((e) => e.id === undefined && e.data.turn === 2)).toBe(true);
      expect(deltas.map((e) => e.data.text).join('')).toBe(text);

      // In order: turn 1, its calls ended, turn 2, the end; the text of turn 2 before turn 2. The
      // text is pushed as it comes while the record is read after a change, so a delta may
      // overtake the events of what was committed just before it: no order is asserted there.
      const at = (match: (e: (typeof events)[number]) => boolean) => events.findIndex(match);
      const turn1 = at((e) => e.event === 'turn' && e.data.turn === 1);
      const hi = at((e) => e.event === 'tool' && e.data.callId === 'call_hi' && e.data.status === 'succeeded');
      const ho = at((e) => e.event === 'tool' && e.data.callId === 'call_ho' && e.data.status === 'succeeded');
      const turn2 = at((e) => e.event === 'turn' && e.data.turn === 2);
      const firstDelta = events.indexOf(deltas[0]);
      const lastDelta = events.indexOf(deltas.at(-1)!);
      expect(Math.min(turn1, hi, ho, turn2, firstDelta)).toBeGreaterThan(0);
      expect(turn1).toBeLessThan(Math.min(hi, ho));
      expect(Math.max(hi, ho)).toBeLessThan(turn2);
      expect(lastDelta).toBeLessThan(turn2);
      expect(turn2).toBeLessThan(events.length - 1);
      expect(events[turn1].data).toMatchObject({
        turn: 1,
        content: null,
        toolCalls: [
          { id: 'call_hi', name: 'transform_jsonata' },
          { id: 'call_ho', name: 'transform_jsonata' },
        ],
        usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
      });
      expect(events[hi].data).toMatchObject({
        turn: 1,
        callId: 'call_hi',
        name: 'transform_jsonata',
        arguments: { text: 'hi' },
        outputBytes: Buffer.byteLength('{"shout":"HI"}'),
        error: null,
      });
      expect(events[hi].data).not.toHaveProperty('output');
      expect(events[turn2].data).toMatchObject({ turn: 2, content: text, toolCalls: [] });

      const executionId = final.data.executionId as string;
      expect(await detail(agent, executionId)).toMatchObject({ status: 'succeeded', output: { text, turns: 2, toolCalls: 2 } });
    });
  });

  describe('tools of the organization', () => {
    let converter: string;
    let caller: string;

    it("refuses at save a tool naming another organization's agent or workflow, a tool without parameters, two tools of one name", async () => {
      const theirAgent = await registerAgent(t, other, {
        name: 'theirs',
        kind: 'transform.jsonata',
        config: { expression: '$' },
        inputSchema: N,
      });
      const theirWorkflow = await defineWorkflow(other, 'theirs');
      const refused = async (tools: unknown[], path: string, message?: string) => {
        const res = await createAgent({ name: 'refused', kind: 'llm.agent', config: { systemPrompt: SYSTEM, tools } });
        expectError(res, 400, 'VALIDATION_FAILED', path);
        if (message) expect(res.body.error.details).toContainEqual({ path, message });
      };

      await refused([{ agent: theirAgent }], 'config.tools.0.agent', `no agent '${theirAgent}' in this organization`);
      await refused([SHOUT, { workflow: theirWorkflow }], 'config.tools.1.workflow', `no workflow '${theirWorkflow}' in this organization`);
      await refused([{ action: 'transform.jsonata', with: { expression: '$' } }], 'config.tools.0.parameters');
      await refused([SHOUT, { ...SHOUT, with: { expression: '$' } }], 'config.tools');

      // The other organization's own agent may use them.
      const res = await createAgent(
        {
          name: 'theirs-too',
          kind: 'llm.agent',
          config: { systemPrompt: SYSTEM, tools: [{ agent: theirAgent }, { workflow: theirWorkflow }] },
        },
        other,
      );
      expect(res.status).toBe(201);
    });

    it('calls an agent of its own organization: a child execution in that agent’s history', async () => {
      converter = await registerAgent(t, org, {
        name: 'Unit Converter',
        description: 'Converts inches to centimetres',
        kind: 'transform.jsonata',
        config: { expression: '{"cm": inches * 2.54}' },
        inputSchema: INCHES,
      });
      caller = await toolAgent({ tools: [{ agent: converter }] }, { name: 'measurer' });
      llm.script(toolCalls([{ id: 'call_cm', name: 'agent_unit_converter', arguments: { inches: 10 } }]), answer('25.4 cm'));

      const { result: res, requests } = await asked(() => execute(caller, 'How long are 10 inches?'));
      expect(res.body).toMatchObject({ status: 'succeeded', output: { text: '25.4 cm', toolCalls: 1 } });
      expect(sentBody(requests[0]).tools).toEqual([
        { type: 'function', function: { name: 'agent_unit_converter', description: 'Converts inches to centimetres', parameters: INCHES } },
      ]);
      expect(messagesOf(requests[1]).at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_cm', content: '{"cm":25.4}' });

      const history = await t.http().get(`/api/agents/${converter}/history`).set(bearer(org.viewer));
      expect(history.body.data).toEqual([
        expect.objectContaining({
          status: 'succeeded',
          input: { inches: 10 },
          output: { cm: 25.4 },
          triggeredBy: { type: 'agent_execution', id: res.body.id, person: org.member.id },
        }),
      ]);
    });

    it('runs as a workflow step: the step answers with the conversation, kept on the step’s execution', async () => {
      const agent = await toolAgent({ tools: [SHOUT] }, { name: 'step assistant' });
      const workflow = await t
        .http()
        .post('/api/workflows')
        .set(bearer(org.admin))
        .send({ name: 'Ask the assistant', steps: [{ id: 'ask', agent, input: 'input' }], output: 'steps.ask.output.text' });
      expect(workflow.status).toBe(201);
      llm.script(toolCalls([{ id: 'call_s', name: 'transform_jsonata', arguments: { text: 'hey' } }]), answer('It shouts HEY'));

      const run = await t
        .http()
        .post(`/api/workflows/${workflow.body.id}/run?wait=15`)
        .set(bearer(org.member))
        .send({ input: 'Shout hey' });
      expect(run.body).toMatchObject({ status: 'succeeded', output: 'It shouts HEY' });
      const executionId = (run.body.steps as Array<{ id: string; executionId: string }>).find((s) => s.id === 'ask')!.executionId;
      const execution = await detail(agent, executionId);
      expect(execution).toMatchObject({ status: 'succeeded', triggeredBy: { type: 'workflow_run', id: run.body.id } });
      expect(execution.conversation).toMatchObject({ turns: 2, toolCalls: 1 });
      expect(execution.conversation.transcript.data[0].toolCalls).toEqual([
        expect.objectContaining({ callId: 'call_s', status: 'succeeded', output: { shout: 'HEY' } }),
      ]);
    });

    it('refuses to delete an agent another agent calls (AGENT_IN_USE), and deletes it once unused', async () => {
      const res = await t.http().delete(`/api/agents/${converter}`).set(bearer(org.admin));
      expectError(res, 409, 'AGENT_IN_USE');
      expect(res.body.error.message).toBe("Agent 'Unit Converter' is used by agent 'measurer' (as a tool)");

      await t.http().delete(`/api/agents/${caller}`).set(bearer(org.admin)).expect(204);
      await t.http().delete(`/api/agents/${converter}`).set(bearer(org.admin)).expect(204);
    });
  });
});
