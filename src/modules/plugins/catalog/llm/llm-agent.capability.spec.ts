import { failureOf, loopbackClient, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { answer, FakeLlm, sentBody, startFakeLlm, toolCalls } from '../../../../../test/support/fake-llm';
import { AgentLoopPorts, JournalTurn, ToolResult } from '../../domain/agent-loop';
import { MAX_TOOL_CONTENT, toolContent } from './llm-agent.capability';
import { createLlmPlugin } from './llm.plugin';

const agent = createLlmPlugin(loopbackClient()).agentKinds.agent;
const TOOL = { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } };

/** The service's side of the loop, in memory: a journal and a tool that counts its calls. */
class MemoryPorts implements AgentLoopPorts {
  readonly tools = [TOOL];
  readonly turns: JournalTurn[] = [];
  readonly calls: Array<{ turn: number; callId: string; arguments: unknown }> = [];
  readonly deltas: string[] = [];
  output: unknown = { found: true };

  readonly journal = {
    load: () => Promise.resolve(structuredClone(this.turns)),
    commitTurn: (turn: JournalTurn) => {
      this.turns.push(structuredClone(turn));
      return Promise.resolve();
    },
    commitCall: (turn: number, callId: string, result: ToolResult, finishedAt: Date) => {
      const call = this.turns.find((t) => t.turn === turn)!.calls.find((c) => c.callId === callId)!;
      Object.assign(call, { result, finishedAt });
      return Promise.resolve();
    },
  };

  callTool(call: { turn: number; callId: string; arguments: unknown }): Promise<ToolResult> {
    this.calls.push({ turn: call.turn, callId: call.callId, arguments: call.arguments });
    return Promise.resolve({ status: 'succeeded', output: this.output });
  }

  delta(_turn: number, text: string): void {
    this.deltas.push(text);
  }
}

describe('llm.agent', () => {
  let llm: FakeLlm;

  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(() => llm.close());
  beforeEach(() => {
    llm.requests.length = 0;
    llm.script();
    llm.reply = answer('Done');
  });

  function run(ports: MemoryPorts, config: Record<string, unknown> = {}) {
    return agent.execute(
      makeExecuteRequest({
        pluginConfig: { baseUrl: llm.baseUrl, defaultModel: 'default-model' },
        config: { systemPrompt: 'You help.', ...config },
        input: { q: 'where?' },
        agentLoop: ports,
      }),
    );
  }

  it('calls the tool the model asks for, sends its output back, and answers', async () => {
    const ports = new MemoryPorts();
    llm.script(toolCalls([{ id: 'c1', name: 'lookup', arguments: { key: 'a' } }]), answer('It is there'));

    const output = await run(ports);

    expect(output).toEqual({
      text: 'It is there',
      usage: { promptTokens: 24, completionTokens: 10, totalTokens: 34 },
      turns: 2,
      toolCalls: 1,
      model: 'served-model',
    });
    expect(ports.calls).toEqual([{ turn: 1, callId: 'c1', arguments: { key: 'a' } }]);
    const second = sentBody(llm.requests[1]);
    expect(second.messages).toEqual([
      { role: 'system', content: 'You help.' },
      { role: 'user', content: '{"q":"where?"}' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"key":"a"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"found":true}' },
    ]);
    expect(second.tools).toEqual([{ type: 'function', function: TOOL }]);
  });

  it('resumes from the journal: committed turns are not asked again, finished calls not run again, unfinished ones are', async () => {
    const ports = new MemoryPorts();
    llm.script(
      toolCalls([
        { id: 'c1', name: 'lookup', arguments: { key: 'a' } },
        { id: 'c2', name: 'lookup', arguments: { key: 'b' } },
      ]),
    );
    llm.reply = () => undefined; // the second turn is never answered: the attempt is cut short
    const controller = new AbortController();
    const first = agent.execute(
      makeExecuteRequest({
        pluginConfig: { baseUrl: llm.baseUrl, defaultModel: 'm' },
        config: { systemPrompt: 'You help.' },
        agentLoop: ports,
        signal: controller.signal,
      }),
    );
    await eventuallyTrue(() => llm.requests.length === 2);
    controller.abort();
    await failureOf(first, 'CANCELED');
    // As if the worker died while the second call ran: its result never committed.
    ports.turns[0].calls[1].result = null;
    ports.calls.length = 0;

    llm.reply = answer('Both found');
    const output = await run(ports);

    expect(output).toMatchObject({ text: 'Both found', turns: 2, toolCalls: 2 });
    expect(ports.calls).toEqual([{ turn: 1, callId: 'c2', arguments: { key: 'b' } }]);
    expect(llm.requests).toHaveLength(3); // turn 1 once, turn 2 twice (it was never committed)
  });

  it('ends with AGENT_TURN_LIMIT when the last turn allowed asks for tools, without running them', async () => {
    const ports = new MemoryPorts();
    llm.reply = toolCalls([{ id: 'c', name: 'lookup', arguments: {} }]);
    const error = await failureOf(run(ports, { maxTurns: 2 }), 'AGENT_TURN_LIMIT');
    expect(error.message).toContain('maxTurns (2)');
    expect(ports.turns).toHaveLength(2);
    expect(ports.calls).toHaveLength(1);
  });

  it('ends with AGENT_TOKEN_LIMIT once the turns used more tokens than maxTokens', async () => {
    const ports = new MemoryPorts();
    llm.reply = toolCalls([{ id: 'c', name: 'lookup', arguments: {} }]);
    await failureOf(run(ports, { maxTokens: 30 }), 'AGENT_TOKEN_LIMIT');
    expect(ports.turns).toHaveLength(2); // 17 + 17 > 30
  });

  it('tells the model arguments that are not JSON, without running the tool', async () => {
    const ports = new MemoryPorts();
    llm.script(toolCalls([{ id: 'c1', name: 'lookup', arguments: '{"key": ' }]), answer('Sorry'));
    await run(ports);
    expect(ports.calls).toEqual([]);
    expect(sentBody(llm.requests[1]).messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringContaining('INVALID_ARGUMENTS'),
    });
  });

  it('starts at most maxParallelToolCalls of one turn, and tells the model the rest were refused', async () => {
    const ports = new MemoryPorts();
    const asked = Array.from({ length: 50 }, (_, i) => ({ id: `c${i}`, name: 'lookup', arguments: { i } }));
    llm.script(toolCalls(asked), answer('Some of them'));
    const output = await run(ports);
    // The default: 8 of the 50 run, the 42 others are answered TOOL_CALL_LIMIT without running.
    expect(ports.calls.map((c) => c.callId)).toEqual(asked.slice(0, 8).map((c) => c.id));
    expect(output).toMatchObject({ text: 'Some of them', toolCalls: 50 });
    const results = sentBody(llm.requests[1]).messages.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(50);
    expect(results[8]).toMatchObject({ tool_call_id: 'c8', content: expect.stringContaining('TOOL_CALL_LIMIT') });
    expect(results.filter((m) => String(m.content).includes('TOOL_CALL_LIMIT'))).toHaveLength(42);

    const fewer = new MemoryPorts();
    llm.script(toolCalls(asked.slice(0, 5)), answer('Two'));
    await run(fewer, { maxParallelToolCalls: 2 });
    expect(fewer.calls.map((c) => c.callId)).toEqual(['c0', 'c1']);
  });

  it('asks once for a repair of an answer that does not match output.schema', async () => {
    const ports = new MemoryPorts();
    const output = { schema: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } } };
    llm.script(answer('Paris'), answer('```json\n{"city": "Paris"}\n```'));
    expect(await run(ports, { output })).toMatchObject({ json: { city: 'Paris' }, turns: 2 });
    expect(ports.turns[0].repair).toContain('does not match');
    expect(sentBody(llm.requests[0]).messages[0].content).toContain('"required":["city"]');

    llm.script(answer('Paris'), answer('{"town": "Paris"}'));
    await failureOf(run(new MemoryPorts(), { output }), 'INVALID_OUTPUT');
  });

  it('cuts what a tool sends the model, saying how much was left out', () => {
    const content = toolContent({ status: 'succeeded', output: 'x'.repeat(MAX_TOOL_CONTENT + 10) });
    expect(content).toHaveLength(MAX_TOOL_CONTENT + '\n[truncated: 10 of 16394 characters left out]'.length);
    expect(content.endsWith('[truncated: 10 of 16394 characters left out]')).toBe(true);
    expect(toolContent({ status: 'failed', error: { code: 'X', message: 'y' } })).toBe('{"error":{"code":"X","message":"y"}}');
  });
});

async function eventuallyTrue(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
}
