import type { ToolSpec } from '../../domain/agent-loop';
import { ExecutionError, ExecutionErrorCode } from '../../domain/plugin';
import { failureOf, loopbackClient } from '../../../../../test/support/execute-request';
import {
  answer,
  eventStream,
  FakeLlm,
  LlmReply,
  respond,
  sentBody,
  startFakeLlm,
  streamChunks,
  streamed,
  toolCallCompletion,
  toolCalls,
} from '../../../../../test/support/fake-llm';
import { modelTurn, ModelTurnRequest } from './model-turn';

const API_KEY = 'sk-test-7f3a9c1e5b';
const client = loopbackClient();
const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } },
};

describe('modelTurn', () => {
  let llm: FakeLlm;
  const errors: ExecutionError[] = [];

  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(() => llm.close());
  beforeEach(() => {
    llm.requests.length = 0;
    llm.script();
    llm.reply = answer('Hello there');
  });

  function turn(overrides: Partial<ModelTurnRequest> = {}) {
    return modelTurn(client, {
      baseUrl: llm.baseUrl,
      apiKey: API_KEY,
      model: 'asked-model',
      messages: [{ role: 'user', content: 'Weather in Paris and Oslo?' }],
      tools: [WEATHER],
      signal: new AbortController().signal,
      timeoutMs: 5000,
      ...overrides,
    });
  }

  async function failure(promise: Promise<unknown>, code: ExecutionErrorCode): Promise<ExecutionError> {
    const error = await failureOf(promise, code);
    errors.push(error);
    return error;
  }

  /** The content deltas of a chunk list, in order. */
  function contentPieces(chunks: Array<{ choices: Array<{ delta: { content?: string | null } }> }>): string[] {
    return chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').filter((piece) => piece !== '');
  }

  const paris = { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' } };
  const oslo = { id: 'call_b', name: 'get_weather', arguments: { city: 'Oslo', unit: 'C' } };

  it('reads a non-streamed reply with two parallel tool calls', async () => {
    llm.reply = toolCalls([paris, { ...oslo, arguments: '{"city": "Oslo",' }]);
    expect(await turn()).toEqual({
      content: null,
      toolCalls: [
        { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_b', name: 'get_weather', arguments: '{"city": "Oslo",' },
      ],
      usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
      model: 'served-model',
      finishReason: 'tool_calls',
    });
  });

  it('reads a non-streamed text reply', async () => {
    expect(await turn()).toMatchObject({ content: 'Hello there', toolCalls: [], finishReason: 'stop' });
  });

  it('streams a text reply: each piece to onDelta in order, the usage from the usage chunk', async () => {
    const content = 'Grüße, Ada 👋 — it is 21 °C in Paris and 9 °C in Oslo.';
    const usage = { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39 };
    llm.reply = streamed({ content, usage }, { pieces: 5 });
    const deltas: string[] = [];

    const reply = await turn({ onDelta: (text) => deltas.push(text) });

    expect(deltas).toEqual(contentPieces(streamChunks({ content }, 5)));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(content);
    expect(reply).toEqual({
      content,
      toolCalls: [],
      usage: { promptTokens: 30, completionTokens: 9, totalTokens: 39 },
      model: 'served-model',
      finishReason: 'stop',
    });
  });

  it('hands a piece to onDelta while the stream is still open', async () => {
    const [role, first, ...rest] = streamChunks({ content: 'It is sunny in Paris' });
    const event = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
    let finish: (() => void) | undefined;
    llm.reply = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(event(role) + event(first));
      finish = () => res.end(`${rest.map(event).join('')}data: [DONE]\n\n`);
    };
    const onDelta = () => {
      finish?.();
      finish = undefined;
    };
    // The server ends the stream only once the first piece has reached onDelta.
    expect((await turn({ onDelta, timeoutMs: 2000 })).content).toBe('It is sunny in Paris');
  });

  it('reads characters whose bytes arrive in different chunks', async () => {
    const content = 'Grüße 👋 — 21 °C';
    llm.reply = eventStream(streamChunks({ content }), { writeBytes: 1 });
    expect((await turn()).content).toBe(content);
  });

  it('assembles streamed parallel tool calls whose arguments arrive in pieces', async () => {
    llm.reply = streamed({ toolCalls: [paris, oslo] }, { pieces: 4 });
    const deltas: string[] = [];
    const reply = await turn({ onDelta: (text) => deltas.push(text) });
    expect(reply).toMatchObject({
      content: null,
      toolCalls: [
        { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_b', name: 'get_weather', arguments: '{"city":"Oslo","unit":"C"}' },
      ],
      finishReason: 'tool_calls',
    });
    expect(deltas).toEqual([]);
  });

  it('keys streamed tool calls by index, and returns them in index order', async () => {
    const call = (index: number, fields: Record<string, unknown>) => ({
      choices: [{ index: 0, delta: { tool_calls: [{ index, ...fields }] } }],
    });
    llm.reply = eventStream([
      call(1, { id: 'call_b', type: 'function', function: { name: 'second', arguments: '{"n":' } }),
      call(0, { id: 'call_a', type: 'function', function: { name: 'first', arguments: '' } }),
      call(1, { function: { arguments: '2}' } }),
      call(0, { function: { arguments: '{"n":1}' } }),
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]);
    const reply = await turn();
    expect(reply.toolCalls).toEqual([
      { id: 'call_a', name: 'first', arguments: '{"n":1}' },
      { id: 'call_b', name: 'second', arguments: '{"n":2}' },
    ]);
    expect(reply).toMatchObject({ model: 'asked-model', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
  });

  it('reads the usage on the last choice chunk, as some servers send it', async () => {
    const [role, ...rest] = streamChunks({ content: 'Hi' }).slice(0, -1);
    const last = rest.pop()!;
    llm.reply = eventStream([role, ...rest, { ...last, usage: { prompt_tokens: 7, completion_tokens: 2 } }]);
    expect((await turn()).usage).toEqual({ promptTokens: 7, completionTokens: 2, totalTokens: 9 });
  });

  it('reports usage as zeros when the server sends none', async () => {
    llm.reply = respond(200, { ...toolCallCompletion([paris]), usage: undefined });
    expect((await turn()).usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
  });

  it('sends the tools as OpenAI functions, asks for a stream with its usage, with the key as Bearer', async () => {
    await turn({ temperature: 0.3 });
    const [request] = llm.requests;
    expect(request.url).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.headers.accept).toBe('text/event-stream, application/json');
    expect(sentBody(request)).toEqual({
      model: 'asked-model',
      messages: [{ role: 'user', content: 'Weather in Paris and Oslo?' }],
      tools: [{ type: 'function', function: WEATHER }],
      temperature: 0.3,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('sends no tools key without tools, and no Authorization without a key', async () => {
    const messages = [
      { role: 'user' as const, content: 'Weather in Paris?' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function' as const, function: { name: 'get_weather', arguments: '{}' } }],
      },
      { role: 'tool' as const, content: '{"celsius":21}', tool_call_id: 'call_a' },
    ];
    await turn({ apiKey: undefined, tools: [], messages });
    const [request] = llm.requests;
    expect(request.headers.authorization).toBeUndefined();
    expect(sentBody(request)).not.toHaveProperty('tools');
    expect(sentBody(request).messages).toEqual(messages);
  });

  it('answers turns in the order the fake was scripted, then with its reply', async () => {
    llm.script(toolCalls([paris]), streamed({ content: 'Sunny.' }));
    expect((await turn()).toolCalls).toHaveLength(1);
    expect((await turn()).content).toBe('Sunny.');
    expect((await turn()).content).toBe('Hello there');
  });

  it.each([
    [429, 'LLM endpoint answered 429 (rate limited)'],
    [500, 'LLM endpoint answered 500 (server error)'],
  ])('reports %i as UPSTREAM_ERROR without echoing the body', async (status, message) => {
    llm.reply = respond(status, { error: { message: `Rate limit reached for key ${API_KEY}` } });
    const error = await failure(turn(), 'UPSTREAM_ERROR');
    expect(error.message).toBe(message);
  });

  it('reports an error chunk in the stream as UPSTREAM_ERROR', async () => {
    const [role, first] = streamChunks({ content: 'It is sunny' });
    llm.reply = eventStream([role, first, { error: { message: `bad key ${API_KEY}`, type: 'server_error' } }], { done: false });
    const deltas: string[] = [];
    const error = await failure(turn({ onDelta: (text) => deltas.push(text) }), 'UPSTREAM_ERROR');
    expect(error.message).toBe('The LLM endpoint reported an error in its stream');
    expect(deltas).toEqual(contentPieces([first]));
  });

  it('accepts a stream that ends with a finish reason but without [DONE]', async () => {
    llm.reply = eventStream(streamChunks({ content: 'Done.' }), { done: false });
    expect((await turn()).content).toBe('Done.');
  });

  it('reports a stream that ends before any finish as UPSTREAM_ERROR', async () => {
    llm.reply = eventStream(streamChunks({ content: 'It is sunny in' }).slice(0, 3), { done: false });
    const error = await failure(turn(), 'UPSTREAM_ERROR');
    expect(error.message).toBe('The LLM stream ended early');
  });

  it('reports a connection cut mid-stream as UPSTREAM_ERROR', async () => {
    llm.reply = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(`data: ${JSON.stringify(streamChunks({ content: 'x' })[0])}\n\n`);
      setTimeout(() => res.socket?.destroy(), 20);
    };
    await failure(turn(), 'UPSTREAM_ERROR');
  });

  it('reports CANCELED when the signal aborts mid-stream', async () => {
    llm.reply = (_req, res) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': waiting\n\n');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await failure(turn({ signal: controller.signal }), 'CANCELED');
  });

  it('reports AGENT_TIMEOUT when the endpoint never answers', async () => {
    llm.reply = () => undefined;
    await failure(turn({ timeoutMs: 200 }), 'AGENT_TIMEOUT');
  });

  it.each<[string, LlmReply]>([
    [
      'a body that is neither JSON nor an event stream',
      (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>'),
    ],
    ['a reply with neither content nor tool calls', respond(200, { choices: [{ index: 0, message: { role: 'assistant', content: '' } }] })],
    ['a tool call without an id', respond(200, toolCallCompletion([{ id: '', name: 'get_weather', arguments: {} }]))],
    ['a streamed tool call without a name', streamed({ toolCalls: [{ id: 'call_a', name: '', arguments: {} }] })],
    ['an event that is not JSON', eventStream(['{"choices": [', streamChunks({ content: 'x' })[1]])],
  ])('reports %s as INVALID_OUTPUT', async (_name, reply) => {
    llm.reply = reply;
    await failure(turn(), 'INVALID_OUTPUT');
  });

  it('keeps the key out of a refusal message even when the base URL carries it', async () => {
    const error = await failure(turn({ baseUrl: `http://10.0.0.1/${API_KEY}/v1` }), 'OUTBOUND_REFUSED');
    expect(error.message).not.toContain(API_KEY);
  });

  it('never put the API key in any error message above', () => {
    expect(errors.length).toBeGreaterThan(10);
    for (const error of errors) expect(error.message).not.toContain(API_KEY);
  });
});
