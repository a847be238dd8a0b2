import { ExecuteRequest, ExecutionError, ExecutionErrorCode } from '../../domain/plugin';
import { failureOf, loopbackClient, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { answer, completion, FakeLlm, respond, startFakeLlm } from '../../../../../test/support/fake-llm';
import { RecordedRequest } from '../../../../../test/support/loopback-server';
import { createLlmPlugin } from './llm.plugin';

const API_KEY = 'sk-test-7f3a9c1e5b';
const chat = createLlmPlugin(loopbackClient()).agentKinds.chat;

describe('llm.chat', () => {
  let llm: FakeLlm;
  const errors: ExecutionError[] = [];

  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(() => llm.close());
  beforeEach(() => {
    llm.requests.length = 0;
    llm.reply = answer('Hello there');
  });

  function call(config: Record<string, unknown> = {}, overrides: Partial<ExecuteRequest> = {}) {
    return chat.execute(
      makeExecuteRequest({
        pluginConfig: { baseUrl: llm.baseUrl, apiKey: API_KEY, defaultModel: 'default-model' },
        config: { promptTemplate: 'Say hi to {{user.name}}', ...config },
        input: { user: { name: 'Ada', tags: ['x', 'y'] }, n: 3 },
        ...overrides,
      }),
    );
  }

  async function failure(promise: Promise<unknown>, code: ExecutionErrorCode): Promise<ExecutionError> {
    const error = await failureOf(promise, code);
    errors.push(error);
    return error;
  }

  function sent(request: RecordedRequest = llm.requests[0]): Record<string, unknown> {
    return JSON.parse(request.body) as Record<string, unknown>;
  }

  it('sends the filled template with the bearer key and maps a text reply', async () => {
    const output = await call({
      systemPrompt: 'Be brief.',
      promptTemplate: 'Hi {{ user.name }} ({{user.tags}}, #{{user.tags.1}}), n={{n}}, missing=[{{no.such.path}}] all={{input}}',
      temperature: 0.2,
      maxTokens: 50,
    });

    expect(output).toEqual({
      text: 'Hello there',
      usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
      model: 'served-model',
      finishReason: 'stop',
    });
    expect(llm.requests[0].headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent()).toEqual({
      model: 'default-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi Ada (["x","y"], #y), n=3, missing=[] all={"user":{"name":"Ada","tags":["x","y"]},"n":3}' },
      ],
      temperature: 0.2,
      max_tokens: 50,
    });
  });

  it('joins a base URL with a trailing slash, and sends no Authorization without a key', async () => {
    await chat.execute(
      makeExecuteRequest({
        pluginConfig: { baseUrl: `${llm.baseUrl}/`, defaultModel: 'default-model' },
        config: { promptTemplate: 'x', model: 'other-model' },
      }),
    );
    expect(llm.requests[0].url).toBe('/v1/chat/completions');
    expect(llm.requests[0].headers.authorization).toBeUndefined();
    expect(sent()).toMatchObject({ model: 'other-model', messages: [{ role: 'user', content: 'x' }] });
  });

  it('asks for a JSON object and parses it when output is json', async () => {
    llm.reply = answer('```json\n{"sentiment": "positive", "score": 0.9}\n```');
    const output = await call({ output: 'json' });
    expect(output).toMatchObject({ json: { sentiment: 'positive', score: 0.9 }, usage: { totalTokens: 17 } });
    expect(sent()).toMatchObject({ response_format: { type: 'json_object' } });
  });

  it('reports 429 as UPSTREAM_ERROR without echoing the upstream body', async () => {
    llm.reply = respond(429, { error: { message: `Rate limit reached for key ${API_KEY}` } });
    const error = await failure(call(), 'UPSTREAM_ERROR');
    expect(error.message).toBe('LLM endpoint answered 429 (rate limited)');
  });

  it('reports a 500 as UPSTREAM_ERROR', async () => {
    llm.reply = respond(500, { error: { message: 'boom' } });
    const error = await failure(call(), 'UPSTREAM_ERROR');
    expect(error.message).toMatch(/500/);
  });

  it('reports a 401 as UPSTREAM_ERROR', async () => {
    llm.reply = respond(401, { error: { message: `Incorrect API key provided: ${API_KEY}` } });
    const error = await failure(call(), 'UPSTREAM_ERROR');
    expect(error.message).toMatch(/401/);
  });

  it.each([
    ['no choices', { ...completion('x'), choices: [] }],
    ['null content', completion(null)],
    ['not an object', 'just text'],
  ])('reports a malformed reply (%s) as INVALID_OUTPUT', async (_name, body) => {
    llm.reply = respond(200, body);
    await failure(call(), 'INVALID_OUTPUT');
  });

  it('reports a body that is not JSON as INVALID_OUTPUT', async () => {
    llm.reply = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
    await failure(call(), 'INVALID_OUTPUT');
  });

  it('reports unparseable content as INVALID_OUTPUT when output is json', async () => {
    llm.reply = answer('Sure! Here is the JSON: {"a": 1');
    await failure(call({ output: 'json' }), 'INVALID_OUTPUT');
  });

  it('times out when the endpoint never answers', async () => {
    llm.reply = () => undefined;
    const started = Date.now();
    await failure(call({}, { timeoutMs: 200 }), 'AGENT_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('reports CANCELED when the signal aborts', async () => {
    llm.reply = () => undefined;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await failure(call({}, { signal: controller.signal }), 'CANCELED');
  });

  it('keeps the key out of a refusal message even when the base URL carries it', async () => {
    const error = await failure(
      chat.execute(
        makeExecuteRequest({
          pluginConfig: { baseUrl: `http://10.0.0.1/${API_KEY}/v1`, apiKey: API_KEY, defaultModel: 'm' },
          config: { promptTemplate: 'x' },
        }),
      ),
      'OUTBOUND_REFUSED',
    );
    expect(error.message).not.toContain(API_KEY);
  });

  it('never put the API key in any error message above', () => {
    expect(errors.length).toBeGreaterThan(8);
    for (const error of errors) expect(error.message).not.toContain(API_KEY);
  });
});
