import { install, registerAgent } from './support/agents';
import { answer, FakeLlm, startFakeLlm, toolCalls } from './support/fake-llm';
import { LoopbackServer, startLoopbackServer } from './support/loopback-server';
import { LoopbackMcpServer, startMcpServer } from './support/mcp-server';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

jest.setTimeout(60_000);

/** Text with what jsonb refuses: a lone high surrogate, a NUL, a lone low surrogate. */
const GARBLED = 'a\ud800b\u0000c\udc00';
/** The same text as stored: each lone surrogate U+FFFD, the NUL gone. */
const STORED = 'a\uFFFDbc\uFFFD';

interface StepBody {
  id: string;
  status: string;
  attempts: number;
  output: unknown;
  error: { code: string; message: string } | null;
}
interface RunBody {
  id: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
  steps: StepBody[];
}

/**
 * What comes back from outside (an MCP tool, an HTTP response, a model) is made storable
 * before it is recorded: text jsonb cannot hold (a lone surrogate, a NUL) is cleaned, so the
 * run ends as the call did, once, instead of losing its worker again and again.
 */
describe('text from outside that the database cannot hold as it is', () => {
  let t: TestApp;
  let org: TestOrg;
  let mcp: LoopbackMcpServer;
  let web: LoopbackServer;
  let llm: FakeLlm;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    mcp = await startMcpServer([
      {
        tool: { name: 'garble', description: 'Answers garbled text', inputSchema: { type: 'object' } },
        call: async () => ({ content: [{ type: 'text', text: GARBLED }], structuredContent: { [`k\u0000ey`]: GARBLED } }),
      },
    ]);
    // JSON.stringify writes the lone surrogates and the NUL as \ud800, \u0000 and \udc00 escapes.
    web = await startLoopbackServer((req, res) => {
      if (req.url === '/text') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.from('x\u0000y', 'utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: GARBLED, [`k\u0000ey`]: ['\ud800'] }));
    });
    llm = await startFakeLlm();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'http');
    await install(t, org, 'transform');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'test-model' });
    const connected = await t.http().post('/api/mcp-servers').set(bearer(org.admin)).send({ name: 'tools', url: mcp.url });
    expect(connected.status).toBe(201);
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([mcp.close(), web.close(), llm.close(), receiver.close()]);
  });

  /** Runs a one-off workflow, waiting for its end; answers the run as stored (read again). */
  async function run(definition: Record<string, unknown>): Promise<RunBody> {
    const defined = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: `wf ${Math.random()}`, ...definition });
    expect(defined.status).toBe(201);
    const started = await t.http().post(`/api/workflows/${defined.body.id}/run?wait=20`).set(bearer(org.member)).send({ input: {} });
    expect(started.status).toBe(200);
    const stored = await t.http().get(`/api/workflows/${defined.body.id}/runs/${started.body.id}`).set(bearer(org.viewer));
    expect(stored.status).toBe(200);
    return stored.body as RunBody;
  }

  it("stores an MCP tool's text with U+FFFD for its lone surrogates and without its NUL, after one call", async () => {
    const calls = mcp.calls.length;
    const body = await run({ steps: [{ id: 'tool', action: 'mcp.tools.garble' }] });
    expect(body).toMatchObject({ status: 'succeeded', error: null });
    expect(body.steps[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(body.steps[0].output).toEqual({
      content: [{ type: 'text', text: STORED }],
      structuredContent: { key: STORED },
      text: STORED,
    });
    expect(body.output).toEqual({ tool: body.steps[0].output });
    expect(mcp.calls.length - calls).toBe(1);
  });

  it('stores an http.request JSON body with lone surrogates and NULs cleaned, keys too; a text body without its NUL', async () => {
    const requests = web.requests.length;
    const body = await run({
      steps: [
        { id: 'json', action: 'http.request', with: { method: 'GET', url: `${web.url}/json` } },
        { id: 'text', action: 'http.request', with: { method: 'GET', url: `${web.url}/text` } },
      ],
    });
    expect(body).toMatchObject({ status: 'succeeded', error: null });
    const [json, text] = ['json', 'text'].map((id) => body.steps.find((s) => s.id === id)!);
    expect(json).toMatchObject({ status: 'succeeded', attempts: 1, output: { status: 200, body: { text: STORED, key: ['\uFFFD'] } } });
    expect(text).toMatchObject({ status: 'succeeded', attempts: 1, output: { status: 200, body: 'xy' } });
    expect(web.requests.length - requests).toBe(2);
  });

  it("stores a model's text with U+FFFD for a lone surrogate (an llm.chat agent as a step)", async () => {
    const chat = await registerAgent(t, org, { name: 'chat', kind: 'llm.chat', config: { promptTemplate: 'Say it' }, maxAttempts: 1 });
    const asked = llm.requests.length;
    llm.script(answer(GARBLED));
    const body = await run({ steps: [{ id: 'chat', agent: chat }] });
    expect(body).toMatchObject({ status: 'succeeded', error: null });
    expect(body.steps[0]).toMatchObject({ status: 'succeeded', attempts: 1, output: { text: STORED, model: 'served-model' } });
    expect(llm.requests.length - asked).toBe(1);
  });

  it("stores an MCP server's tools as it lists them, lone surrogates U+FFFD and NULs removed, and calls them", async () => {
    const odd = await startMcpServer([
      {
        tool: {
          name: 'odd',
          description: `Says ${GARBLED}`,
          inputSchema: { type: 'object', properties: { note: { type: 'string', description: GARBLED } } },
        },
        call: async () => ({ content: [{ type: 'text', text: 'fine' }] }),
      },
    ]);
    try {
      const connected = await t.http().post('/api/mcp-servers').set(bearer(org.admin)).send({ name: 'odd', url: odd.url });
      expect(connected.status).toBe(201);
      expect(connected.body.tools).toMatchObject([
        {
          name: 'odd',
          action: 'mcp.odd.odd',
          description: `Says ${STORED}`,
          inputSchema: { properties: { note: { description: STORED } } },
        },
      ]);
      const refreshed = await t.http().post(`/api/mcp-servers/${connected.body.id}/refresh`).set(bearer(org.admin)).send();
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.tools[0].description).toBe(`Says ${STORED}`);
      const body = await run({ steps: [{ id: 'odd', action: 'mcp.odd.odd' }] });
      expect(body).toMatchObject({ status: 'succeeded', output: { odd: { text: 'fine' } } });
    } finally {
      await odd.close();
    }
  });

  it("keeps an llm.agent's turns storable: the model's tool-call arguments and its answer, and the tool's output", async () => {
    const agent = await registerAgent(t, org, {
      name: 'garbled',
      kind: 'llm.agent',
      config: { systemPrompt: 'Use the tool.', tools: [{ action: 'mcp.tools.garble' }] },
      maxAttempts: 1,
    });
    const asked = llm.requests.length;
    llm.script(toolCalls([{ id: 'call_1', name: 'mcp_tools_garble', arguments: { note: GARBLED } }]), answer(GARBLED));
    const res = await t.http().post(`/api/agents/${agent}/execute?wait=20`).set(bearer(org.member)).send({ input: 'go' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', output: { text: STORED, turns: 2, toolCalls: 1 } });
    expect(llm.requests.length - asked).toBe(2);
    const detail = await t.http().get(`/api/agents/${agent}/history/${res.body.id}`).set(bearer(org.viewer));
    expect(detail.status).toBe(200);
    const [first, second] = detail.body.conversation.transcript.data as Array<Record<string, unknown>>;
    expect(first).toMatchObject({
      toolCalls: [{ callId: 'call_1', arguments: { note: STORED }, status: 'succeeded', output: { text: STORED } }],
    });
    expect(second).toMatchObject({ content: STORED });
  });

  it("keeps a webhook receiver's answer in the delivery log without its NUL", async () => {
    const owner = await t.newOrg('team');
    const hook = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(owner.admin))
      .send({ url: receiver.url('/nul'), eventTypes: ['plugin.*'] });
    expect(hook.status).toBe(201);
    receiver.script('/nul', { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok\u0000done' });
    const res = await t.http().post(`/api/webhooks/${hook.body.id}/test`).set(bearer(owner.admin)).send({});
    expect(res.status).toBe(200);
    expect(res.body.attempt).toMatchObject({ statusCode: 200, responseBody: 'okdone', error: null });
    // Sent once: the attempt was recorded as it went, not sent again because it could not be.
    expect(receiver.on('/nul')).toHaveLength(1);
    const detail = await t.http().get(`/api/webhooks/${hook.body.id}/deliveries/${res.body.messageId}`).set(bearer(owner.viewer));
    expect(detail.body).toMatchObject({ status: 'succeeded', attemptLog: [{ statusCode: 200, responseBody: 'okdone' }] });
  });
});
