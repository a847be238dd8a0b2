import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { executionsWithoutLiveJob, install, registerAgent, settled } from '../support/agents';
import { eventually } from '../support/eventually';
import { answer, FakeLlm, LlmReply, startFakeLlm, streamChunks, toolCalls } from '../support/fake-llm';
import { openEventStream } from '../support/event-stream';
import { LoopbackServer, RecordedRequest, sendJson, startLoopbackServer } from '../support/loopback-server';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * An `llm.agent` on real worker processes (APP_ROLE=worker) beside this test's API-only app,
 * all on one Postgres. The model is a scripted fake OpenAI server; its tools are `http.request`
 * actions that POST to a loopback server counting their calls. A worker is killed with SIGKILL
 * at a chosen point of the conversation, and the next worker resumes it from the journal
 * (`agent_execution_steps`): finished turns are not asked again, finished calls not run again.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const WORKER_ENV = { APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1', WORKER_CONCURRENCY: '4' };
/** Short, so a killed worker's lease (the timeout and 5 s) runs out soon. */
const TIMEOUT_MS = 5000;

jest.setTimeout(120_000);

/** Never answers: the request stays open until the process that sent it dies. */
const hold: LlmReply = () => undefined;

describe('llm.agent under worker crashes', () => {
  let t: TestApp;
  let org: TestOrg;
  let llm: FakeLlm;
  let tools: LoopbackServer;
  /** Paths whose next tool request is held open (never answered). */
  const holdNext = new Set<string>();
  const held: ServerResponse[] = [];
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    llm = await startFakeLlm();
    tools = await startLoopbackServer((req, res) => {
      if (holdNext.delete(req.url)) return void held.push(res);
      sendJson(res, 200, { received: req.url });
    });
    t = await createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    org = await t.newOrg('enterprise');
    await install(t, org, 'http');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'm' });
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    await t.close();
    await llm.close();
    await tools.close();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    holdNext.clear();
  });

  const parameters = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  const tool = (name: string, path: string) => ({
    name,
    action: 'http.request',
    with: { method: 'POST', url: `${tools.url}${path}` },
    parameters,
  });

  /** An agent whose tools POST to `<path>/a` and `<path>/b`, and one execution of it, queued. */
  const start = async (path: string) => {
    const agentId = await registerAgent(t, org, {
      kind: 'llm.agent',
      config: { systemPrompt: 'Call tool_a, then tool_b, then answer.', tools: [tool('tool_a', `${path}/a`), tool('tool_b', `${path}/b`)] },
      timeoutMs: TIMEOUT_MS,
    });
    const res = await t
      .http()
      .post(`/api/agents/${agentId}/execute?wait=0`)
      .set(bearer(org.member))
      .send({ input: { task: path } });
    expect(res.status).toBe(202);
    return { agentId, executionId: res.body.id as string };
  };

  const detail = async (agentId: string, executionId: string) => {
    const res = await t.http().get(`/api/agents/${agentId}/history/${executionId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as {
      status: string;
      attempts: number;
      output: { text?: string; turns: number; toolCalls: number } | null;
      conversation: {
        turns: number;
        toolCalls: number;
        transcript: { data: Array<{ turn: number; content: string | null; toolCalls: Array<{ callId: string; status: string }> }> };
      } | null;
    };
  };

  /** The chat requests the fake received since `from`, as the number of messages each sent (2 for turn 1, 4 for turn 2, 6 for turn 3). */
  const chatRequests = (from: number): RecordedRequest[] => llm.requests.slice(from).filter((r) => r.url === '/v1/chat/completions');
  const messageCounts = (requests: RecordedRequest[]) =>
    requests.map((r) => (JSON.parse(r.body) as { messages: unknown[] }).messages.length);
  /** A request's body with each tool message's content parsed (its JSON, not its text). */
  const sentConversation = (request: RecordedRequest) => {
    const body = JSON.parse(request.body) as { messages: Array<{ role: string; content: string | null }> };
    return { ...body, messages: body.messages.map((m) => (m.role === 'tool' ? { ...m, content: JSON.parse(m.content!) as unknown } : m)) };
  };
  const toolRequests = (path: string) => tools.requests.filter((r) => r.url === path);

  /** The journal rows of the execution, as `turn.position`. */
  const steps = async (executionId: string) =>
    (
      await t.app
        .get(DataSource)
        .query<Array<{ turn: number; position: number }>>(
          'SELECT turn, position FROM agent_execution_steps WHERE execution_id = $1 ORDER BY turn, position',
          [executionId],
        )
    ).map((r) => `${r.turn}.${r.position}`);

  it('after a crash between the last tool call and the answer, asks only the last turn again and runs no tool again', async () => {
    const first = await startService(WORKER_ENV);
    workers.push(first);
    const from = llm.requests.length;
    llm.script(
      toolCalls([{ id: 'call_a', name: 'tool_a', arguments: { n: 1 } }]),
      toolCalls([{ id: 'call_b', name: 'tool_b', arguments: { n: 2 } }]),
      hold,
      answer('All done'),
    );
    const { agentId, executionId } = await start('/after-b');

    // Turn 3 asked (and held): tool B's result is committed before the model is asked again.
    await eventually(
      async () =>
        chatRequests(from).length >= 3 &&
        (await detail(agentId, executionId)).conversation?.transcript.data[1]?.toolCalls[0]?.status === 'succeeded',
      { timeoutMs: 20_000, intervalMs: 50, message: 'turn 3 to be asked with tool B finished' },
    );
    await first.kill('SIGKILL');
    workers.splice(0);
    expect(messageCounts(chatRequests(from))).toEqual([2, 4, 6]);

    workers.push(await startService(WORKER_ENV));
    const done = await settled(t, org, agentId, executionId, 40_000);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2, output: { text: 'All done', turns: 3, toolCalls: 2 } });

    // Turns 1 and 2 asked once in all; turn 3 once per process, with the same conversation.
    const requests = chatRequests(from);
    expect(messageCounts(requests)).toEqual([2, 4, 6, 6]);
    // The same conversation, up to the key order of the tool results' JSON: the first process
    // sends a result as the tool gave it, the second as read back from jsonb (keys reordered).
    expect(sentConversation(requests[3])).toEqual(sentConversation(requests[2]));
    expect(toolRequests('/after-b/a')).toHaveLength(1);
    expect(toolRequests('/after-b/b')).toHaveLength(1);

    const { conversation } = await detail(agentId, executionId);
    expect(conversation).toMatchObject({ turns: 3, toolCalls: 2 });
    expect(conversation!.transcript.data.map((turn) => turn.toolCalls.map((c) => [c.callId, c.status]))).toEqual([
      [['call_a', 'succeeded']],
      [['call_b', 'succeeded']],
      [],
    ]);
    expect(conversation!.transcript.data[2].content).toBe('All done');
    expect(await steps(executionId)).toEqual(['1.0', '1.1', '2.0', '2.1', '3.0']);
    expect(await executionsWithoutLiveJob(t.app.get(DataSource), org.id)).toEqual([]);
  });

  it('after a crash while tool call B is in flight, runs B again (and only B), then asks for the answer', async () => {
    const first = await startService(WORKER_ENV);
    workers.push(first);
    const from = llm.requests.length;
    holdNext.add('/during-b/b');
    llm.script(
      toolCalls([{ id: 'call_a', name: 'tool_a', arguments: { n: 1 } }]),
      toolCalls([{ id: 'call_b', name: 'tool_b', arguments: { n: 2 } }]),
      answer('All done'),
    );
    const { agentId, executionId } = await start('/during-b');

    // B reached the receiver, which holds its answer; the journal shows it unfinished.
    await eventually(
      async () =>
        toolRequests('/during-b/b').length === 1 &&
        (await detail(agentId, executionId)).conversation?.transcript.data[1]?.toolCalls[0]?.status === 'running',
      { timeoutMs: 20_000, intervalMs: 50, message: 'tool B to be in flight' },
    );
    await first.kill('SIGKILL');
    workers.splice(0);
    expect(messageCounts(chatRequests(from))).toEqual([2, 4]);

    workers.push(await startService(WORKER_ENV));
    const done = await settled(t, org, agentId, executionId, 40_000);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2, output: { text: 'All done', turns: 3, toolCalls: 2 } });

    expect(messageCounts(chatRequests(from))).toEqual([2, 4, 6]);
    expect(toolRequests('/during-b/a')).toHaveLength(1);
    const b = toolRequests('/during-b/b');
    expect(b).toHaveLength(2);
    // The same call both times. http.request sends no Idempotency-Key (undefined both times);
    // the next case sees the key through a tool that sends it.
    expect(b[1].body).toBe(b[0].body);
    expect(b[1].headers['idempotency-key']).toBe(b[0].headers['idempotency-key']);

    const { conversation } = await detail(agentId, executionId);
    expect(conversation!.transcript.data.map((turn) => turn.toolCalls.map((c) => [c.callId, c.status]))).toEqual([
      [['call_a', 'succeeded']],
      [['call_b', 'succeeded']],
      [],
    ]);
    expect(await steps(executionId)).toEqual(['1.0', '1.1', '2.0', '2.1', '3.0']);
    expect(await executionsWithoutLiveJob(t.app.get(DataSource), org.id)).toEqual([]);
  });
  it('gives a call run again after a crash the same idempotency key: an agent tool (http.agent) sends it', async () => {
    const first = await startService(WORKER_ENV);
    workers.push(first);
    const from = llm.requests.length;
    holdNext.add('/key/b');
    const remoteId = await registerAgent(t, org, {
      name: 'remote',
      kind: 'http.agent',
      config: { url: `${tools.url}/key/b` },
      timeoutMs: TIMEOUT_MS,
    });
    const agentId = await registerAgent(t, org, {
      kind: 'llm.agent',
      config: {
        systemPrompt: 'Call tool_a, then tool_b, then answer.',
        tools: [tool('tool_a', '/key/a'), { name: 'tool_b', agent: remoteId, parameters }],
      },
      timeoutMs: TIMEOUT_MS,
    });
    llm.script(
      toolCalls([{ id: 'call_a', name: 'tool_a', arguments: { n: 1 } }]),
      toolCalls([{ id: 'call_b', name: 'tool_b', arguments: { n: 2 } }]),
      answer('All done'),
    );
    const res = await t
      .http()
      .post(`/api/agents/${agentId}/execute?wait=0`)
      .set(bearer(org.member))
      .send({ input: { task: 'key' } });
    expect(res.status).toBe(202);
    const executionId = res.body.id as string;

    await eventually(() => toolRequests('/key/b').length === 1, {
      timeoutMs: 20_000,
      intervalMs: 50,
      message: 'the remote agent to be called',
    });
    await first.kill('SIGKILL');
    workers.splice(0);

    workers.push(await startService(WORKER_ENV));
    const done = await settled(t, org, agentId, executionId, 40_000);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2, output: { text: 'All done', turns: 3, toolCalls: 2 } });
    expect(messageCounts(chatRequests(from))).toEqual([2, 4, 6]);
    expect(toolRequests('/key/a')).toHaveLength(1);
    expect(toolRequests('/key/b').map((r) => r.headers['idempotency-key'])).toEqual([`${executionId}:2:call_b`, `${executionId}:2:call_b`]);

    // The remote agent's execution (one, triggered by the call) ended with the call.
    const owned = await t.app
      .get(DataSource)
      .query<Array<{ status: string }>>(`SELECT status FROM agent_executions WHERE triggered_by->>'id' = $1`, [executionId]);
    expect(owned).toEqual([{ status: 'succeeded' }]);
  });

  it("streams the model's text from the worker that runs the execution to a live stream served by the API process", async () => {
    workers.push(await startService(WORKER_ENV));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The text streams, then the reply waits (no finish) until the API's stream has shown it.
    const chunks = streamChunks({ content: 'Hello from the worker' }, 4);
    llm.script((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks.slice(0, -2)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      void released.then(() => {
        for (const chunk of chunks.slice(-2)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    const { agentId, executionId } = await start('/deltas');
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    const stream = await openEventStream(`${base}/api/agents/${agentId}/history/${executionId}/events`, bearer(org.viewer));
    try {
      const text = () =>
        stream.events
          .filter((e) => e.event === 'delta')
          .map((e) => e.data.text)
          .join('');
      await eventually(() => text() === 'Hello from the worker', { timeoutMs: 20_000, message: 'the deltas on the API process' });
      expect(stream.events.filter((e) => e.event === 'delta').every((e) => e.data.turn === 1)).toBe(true);
      release();
      const final = await stream.until((e) => e.event === 'execution' && e.data.status === 'succeeded', 20_000);
      expect(final.data.executionId).toBe(executionId);
      expect(stream.events.find((e) => e.event === 'turn')?.data).toMatchObject({ turn: 1, content: 'Hello from the worker' });
    } finally {
      release();
      stream.close();
    }
  });
});
