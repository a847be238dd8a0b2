/**
 * Agent execution benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL
 * database per phase, executing a transform.jsonata agent (phases sync and async) and an
 * llm.agent that calls tools (phase llm).
 *
 *   1. sync: synchronous execute (?wait=30) latency with 1 and with 20 concurrent clients on two APP_ROLE=all
 *      processes side by side, one evaluating expressions inline (EXPRESSION_SANDBOX=inline, the way
 *      they ran before the sandbox) and one in the sandbox's worker threads (the default), with the
 *      requests alternating between them;
 *   2. async: asynchronous throughput: M executions enqueued (?wait=0) on an APP_ROLE=api process, then
 *      drained by 1 and by 2 APP_ROLE=worker processes; executions/s is measured from the rows.
 *   3. llm: an llm.agent against a scripted OpenAI-compatible server in this process on loopback
 *      (OUTBOUND_ALLOWLIST=127.0.0.1), which answers at once and statelessly, the turn read from
 *      the number of messages: turn 1 calls the agent's one tool (transform.jsonata, uppercase),
 *      turn 2 calls it again, turn 3 answers with the two tool outputs ("HELLO WORLD").
 *      a. sequential conversations (?wait=30, 1 client) on one APP_ROLE=all process, alternating
 *         with executions of the plain transform.jsonata agent; per conversation, the overhead
 *         per turn = (the execution's durationMs − the time the fake spent answering its three
 *         requests) / 3, with where the time went from the transcript (GET .../history/:id): the
 *         model calls as the loop timed them (turn startedAt → finishedAt), the turn commits
 *         with the tool calls (call startedAt → finishedAt), and the rest;
 *      b. drains as phase 2 with one worker, BENCH_LLM_EXECUTIONS each: the plain transform
 *         agent, then the 3-turn conversation; executions/s of each from the rows, and the ratio.
 *
 * Run with `npm run bench:agents`. Settings (environment):
 *   DATABASE_URL                     PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test);
 *                                    one database per phase is created on it and dropped at the end
 *   BENCH_PHASES                     phases to run, comma-separated (sync,async,llm; default all)
 *   BENCH_WARMUP_REQUESTS            sync warm-up requests (200)
 *   BENCH_SYNC_REQUESTS              sync requests measured with 1 client (2000)
 *   BENCH_SYNC_CONCURRENT_REQUESTS   sync requests measured with BENCH_SYNC_CLIENTS clients (4000)
 *   BENCH_SYNC_CLIENTS               concurrent sync clients (20)
 *   BENCH_ASYNC_EXECUTIONS           executions enqueued per async phase (5000)
 *   BENCH_ENQUEUE_CLIENTS            concurrent enqueue clients (50)
 *   BENCH_ASYNC_TIMEOUT_SECONDS      longest wait for the workers to finish them (600)
 *   BENCH_LLM_WARMUP                 llm phase: warm-up executions of each agent (50)
 *   BENCH_LLM_SEQUENTIAL             llm phase: sequential executions of each agent measured (300)
 *   BENCH_LLM_EXECUTIONS             llm phase: executions enqueued per drain (1500)
 *   BENCH_LLM_REPLY                  llm phase: how the fake answers, stream (text/event-stream, as the
 *                                    service asks) or json (one chat.completion) (stream)
 *   BENCH_READY_TIMEOUT_SECONDS      longest wait for a process to be ready (120)
 *   WORKER_CONCURRENCY, DB_POOL_SIZE passed through to the service processes
 */
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import {
  brief,
  field,
  fixed,
  formatRows,
  intFromEnv,
  JsonClient,
  loadRow,
  log,
  loginAndInstallTransform,
  machineLine,
  randomCredentials,
  reportErrors,
  Row,
  runInterleaved,
  runLoad,
  SANDBOX_MODES,
  ScratchDatabases,
  serviceEnv,
  startSandboxPair,
  Services,
  summarize,
  unexpected,
  verdict,
  waitForDrain,
  cleanupOnce,
  drainFigures,
  runBenchmark,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');

const PHASES = ['sync', 'async', 'llm'] as const;
type Phase = (typeof PHASES)[number];

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  phases: phasesFromEnv(),
  warmupRequests: intFromEnv('BENCH_WARMUP_REQUESTS', 200),
  syncRequests: intFromEnv('BENCH_SYNC_REQUESTS', 2000),
  syncConcurrentRequests: intFromEnv('BENCH_SYNC_CONCURRENT_REQUESTS', 4000),
  syncClients: intFromEnv('BENCH_SYNC_CLIENTS', 20),
  asyncExecutions: intFromEnv('BENCH_ASYNC_EXECUTIONS', 5000),
  enqueueClients: intFromEnv('BENCH_ENQUEUE_CLIENTS', 50),
  asyncTimeoutMs: intFromEnv('BENCH_ASYNC_TIMEOUT_SECONDS', 600) * 1000,
  llmWarmup: intFromEnv('BENCH_LLM_WARMUP', 50),
  llmSequential: intFromEnv('BENCH_LLM_SEQUENTIAL', 300),
  llmExecutions: intFromEnv('BENCH_LLM_EXECUTIONS', 1500),
  llmReply: llmReplyFromEnv(),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

function phasesFromEnv(): Phase[] {
  const raw = (process.env.BENCH_PHASES || PHASES.join(',')).split(',').map((p) => p.trim());
  const unknown = raw.filter((p) => !PHASES.includes(p as Phase));
  if (unknown.length) throw new Error(`BENCH_PHASES: unknown phase(s) ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  return PHASES.filter((p) => raw.includes(p));
}

function llmReplyFromEnv(): 'stream' | 'json' {
  const raw = process.env.BENCH_LLM_REPLY || 'stream';
  if (raw !== 'stream' && raw !== 'json') throw new Error(`BENCH_LLM_REPLY must be stream or json, got '${raw}'`);
  return raw;
}

const TARGETS = {
  syncP50Ms: 10,
  syncP99Ms: 50,
  asyncPerSecond: 1000,
  /** llm.agent: the service's time per turn beyond the model's, p50. */
  llmOverheadPerTurnP50Ms: 5,
  /** The 3-turn conversation's drain against the plain transform drain. */
  llmToTransformDrainRatio: 0.25,
};
/** Requests per turn when the sync load alternates between the two processes. */
const SYNC_CHUNK = 50;
/** Executions per turn when the llm phase's sequential load alternates between the two agents. */
const LLM_CHUNK = 25;

/** Shared by every process of the run: tokens and encrypted secrets must be valid across them. */
const credentials = randomCredentials();

/** An agent the benchmark executes: how it is made, what it is given and what it must answer. */
interface AgentCase {
  label: string;
  /** Installs what the agent needs (beyond the transform plugin) and answers its definition. */
  definition(client: JsonClient): Promise<object>;
  /** The execute body of the i-th execution. */
  input(i: number): { input: unknown };
  /** Null when the output is the expected one, else what is wrong with it. */
  checkOutput(output: unknown): string | null;
}

const TRANSFORM: AgentCase = {
  label: 'transform.jsonata',
  definition: async () => ({ name: 'bench', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } }),
  input: () => ({ input: { text: 'hello' } }),
  checkOutput: (output) => (output === 'HELLO' ? null : `output ${brief(output)}`),
};

const services = new Services(ENTRY, ROOT);
/** Aborted on SIGINT: the load stops so the services can shut down promptly. */
const interrupted = new AbortController();
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_${Date.now()}`);

// ---------------------------------------------------------------------------------------------
// API calls

/** Logs in once, installs the transform plugin (and what the case needs) and registers the agent. */
async function prepareAgent(service: JsonClient, agentCase: AgentCase = TRANSFORM): Promise<{ client: JsonClient; agentId: string }> {
  const client = await loginAndInstallTransform(service, credentials);
  const agent = await client.request('POST', '/api/agents', await agentCase.definition(client));
  const agentId = field(agent.body, 'id');
  if (agent.status !== 201 || typeof agentId !== 'string') throw unexpected('agent creation', agent.status, agent.body);
  return { client, agentId };
}

/** One synchronous execution; null when it answered 200 succeeded with the expected output. */
async function executeAndWait(client: JsonClient, agentId: string, agentCase: AgentCase = TRANSFORM, i = 0): Promise<string | null> {
  const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=30`, agentCase.input(i));
  if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
  if (field(res.body, 'status') !== 'succeeded') return `200 but ${brief(res.body)}`;
  const problem = agentCase.checkOutput(field(res.body, 'output'));
  return problem && `200 but ${problem}`;
}

/** One queued execution; null when it answered 202 queued. */
async function enqueue(client: JsonClient, agentId: string, agentCase: AgentCase = TRANSFORM, i = 0): Promise<string | null> {
  const res = await client.request('POST', `/api/agents/${agentId}/execute?wait=0`, agentCase.input(i));
  if (res.status !== 202 || field(res.body, 'status') !== 'queued') return `HTTP ${res.status} ${brief(res.body)}`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Phases

/**
 * Phase 1: synchronous latency on two APP_ROLE=all processes side by side, one evaluating
 * expressions inline (as before the sandbox) and one in the sandbox's threads; requests
 * alternate between them in chunks, so machine noise falls on both alike.
 */
async function syncPhase(): Promise<Row[]> {
  const modes = SANDBOX_MODES;
  const calls = await startSandboxPair({ databases, services, credentials, readyTimeoutMs: settings.readyTimeoutMs }, async (service) => {
    const { client, agentId } = await prepareAgent(service);
    return () => executeAndWait(client, agentId);
  });
  for (const sandbox of modes) {
    log(`sync (${sandbox}): warming up with ${settings.warmupRequests} requests`);
    reportErrors('warm-up', await runLoad(settings.syncClients, settings.warmupRequests, calls[sandbox], interrupted.signal));
  }
  log(`sync: ${settings.syncRequests} requests each, 1 client, interleaved`);
  const serial = await runInterleaved(calls, 1, settings.syncRequests, SYNC_CHUNK, interrupted.signal);
  log(`sync: ${settings.syncConcurrentRequests} requests each, ${settings.syncClients} clients, interleaved`);
  const concurrent = await runInterleaved(calls, settings.syncClients, settings.syncConcurrentRequests, SYNC_CHUNK * 2, interrupted.signal);

  services.assertAlive();
  await services.stopAll();
  return [
    ...modes.map((m) => loadRow(`sync execute ?wait=30, 1 client, ${m}`, serial[m])),
    ...modes.map((m) => loadRow(`sync execute ?wait=30, ${settings.syncClients} clients, ${m}`, concurrent[m])),
  ];
}

/**
 * Phase 2 (and the llm phase's drains): `count` executions of the case's agent queued on an
 * API-only process, then drained by `workers` worker processes; `extraEnv` goes to every process.
 */
async function drainPhase(options: {
  name: string;
  rowPrefix: string;
  workers: number;
  agentCase: AgentCase;
  count: number;
  extraEnv?: Record<string, string>;
}): Promise<Row[]> {
  const { name, rowPrefix, workers, agentCase, count, extraEnv = {} } = options;
  const databaseUrl = await databases.create(name);
  log(`${name}: starting one APP_ROLE=api process`);
  const api = await services.start('api', { ...serviceEnv(credentials, databaseUrl, 'api'), ...extraEnv }, settings.readyTimeoutMs);
  const { client, agentId } = await prepareAgent(api, agentCase);

  log(`${name}: enqueueing ${count} executions of ${agentCase.label}, ${settings.enqueueClients} clients`);
  let next = 0;
  const queued = await runLoad(settings.enqueueClients, count, () => enqueue(client, agentId, agentCase, next++), interrupted.signal);
  const enqueueRow = loadRow(`${rowPrefix}enqueue ?wait=0, ${settings.enqueueClients} clients`, queued);

  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    log(`${name}: starting ${workers} APP_ROLE=worker process(es)`);
    const spawnedAt = performance.now();
    await Promise.all(
      Array.from({ length: workers }, (_, i) =>
        services.start(`worker ${i + 1}`, { ...serviceEnv(credentials, databaseUrl, 'worker'), ...extraEnv }, settings.readyTimeoutMs),
      ),
    );
    await waitForDrain(db, { table: 'agent_executions', column: 'agent_id', id: agentId }, settings.asyncTimeoutMs, () => {
      services.assertAlive();
      if (interrupted.signal.aborted) throw new Error('interrupted');
    });
    const wallSeconds = (performance.now() - spawnedAt) / 1000;
    const drain = await drainFigures(db, agentId);
    services.assertAlive();
    const drainRow: Row = {
      scenario: `${rowPrefix}async drain, ${workers} worker${workers > 1 ? 's' : ''}`,
      count: drain.succeeded,
      errors: drain.total - drain.succeeded,
      p50: drain.p50,
      p99: drain.p99,
      mean: drain.mean,
      throughput: drain.throughput,
      wallSeconds,
    };
    if (drainRow.errors) log(`${name}: ${drainRow.errors} execution(s) did not succeed, e.g. ${await failureSample(db, agentId)}`);
    return [enqueueRow, drainRow];
  } finally {
    await db.end();
    await services.stopAll();
  }
}

/** Phase 2: M transform executions queued on an API-only process, then drained by `workers` worker processes. */
function asyncPhase(workers: number): Promise<Row[]> {
  return drainPhase({ name: `async_${workers}w`, rowPrefix: '', workers, agentCase: TRANSFORM, count: settings.asyncExecutions });
}

async function failureSample(db: Client, agentId: string): Promise<string> {
  const { rows } = await db.query<{ status: string; error: unknown }>(
    `SELECT status, error FROM agent_executions WHERE agent_id = $1 AND status <> 'succeeded' LIMIT 1`,
    [agentId],
  );
  return brief(rows[0]);
}

// ---------------------------------------------------------------------------------------------
// The llm phase: a scripted OpenAI-compatible server and an llm.agent that calls tools

/** The agent's one tool: transform.jsonata uppercasing `text`. */
const TOOL = {
  action: 'transform.jsonata',
  with: { expression: '$uppercase(text)' },
  name: 'shout',
  description: 'Answers the text in capitals',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
};
const LLM_TURNS = 3;
const LLM_ANSWER = 'HELLO WORLD';

interface ChatRequestMessage {
  role: string;
  content: string | null;
}

/** A reply of the script: text, or tool calls. */
interface ScriptedReply {
  content: string | null;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

/**
 * The script, decided from the number of messages alone (so any number of conversations may
 * run at once): [system, user] → call `shout` with the input's text; + [assistant, tool] →
 * call it with "world"; + [assistant, tool] again → answer with the two tool outputs.
 */
function scriptedReply(messages: ChatRequestMessage[]): ScriptedReply {
  switch (messages.length) {
    case 2: {
      const input = JSON.parse(messages[1].content ?? '') as { text: string };
      return { content: null, toolCalls: [{ id: 'call_1', name: TOOL.name, arguments: JSON.stringify({ text: input.text }) }] };
    }
    case 4:
      return { content: null, toolCalls: [{ id: 'call_2', name: TOOL.name, arguments: JSON.stringify({ text: 'world' }) }] };
    case 6:
      return {
        content: messages
          .filter((m) => m.role === 'tool')
          .map((m) => m.content)
          .join(' '),
        toolCalls: [],
      };
    default:
      throw new Error(`no scripted reply to a conversation of ${messages.length} messages`);
  }
}

const MODEL = 'bench-model';
const USAGE = { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 };

/** The reply as one `chat.completion`. */
function completionBody(reply: ScriptedReply): string {
  const tool_calls = reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  return JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: reply.content, ...(tool_calls.length ? { tool_calls } : {}) },
        finish_reason: tool_calls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: USAGE,
  });
}

/** The reply as OpenAI streams it (role, content, each call, finish reason, usage, [DONE]), written at once. */
function streamBody(reply: ScriptedReply): string {
  const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: MODEL };
  const chunk = (delta: object, finish_reason: string | null = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason }] });
  const events = [
    chunk({ role: 'assistant', content: '' }),
    ...(reply.content ? [chunk({ content: reply.content })] : []),
    ...reply.toolCalls.map((c, index) =>
      chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }] }),
    ),
    chunk({}, reply.toolCalls.length ? 'tool_calls' : 'stop'),
    { ...base, choices: [], usage: USAGE },
  ];
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}

/**
 * An OpenAI-compatible chat-completions server on 127.0.0.1 answering the script at once; it
 * keeps, per conversation (the `id` of the execution's input, which is the user message), the
 * time it spent on its requests: request received → answer written.
 */
class ScriptedModel {
  private server?: Server;
  private port = 0;
  readonly spentMs = new Map<string, number>();
  requests = 0;
  /** TCP connections the service opened to it: as many as requests when it keeps none alive. */
  connections = 0;
  readonly failures: string[] = [];

  constructor(private readonly reply: 'stream' | 'json') {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const begin = performance.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        let conversation = '';
        res.once('finish', () => this.spentMs.set(conversation, (this.spentMs.get(conversation) ?? 0) + performance.now() - begin));
        try {
          if (req.method !== 'POST' || req.url !== '/v1/chat/completions') throw new Error(`${req.method} ${req.url}: no route`);
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: ChatRequestMessage[]; stream?: boolean };
          conversation = String(field(JSON.parse(body.messages[1]?.content ?? 'null'), 'id'));
          const reply = scriptedReply(body.messages);
          if (body.stream && this.reply === 'stream') {
            res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }).end(streamBody(reply));
          } else {
            res.writeHead(200, { 'content-type': 'application/json' }).end(completionBody(reply));
          }
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (this.failures.length < 5) this.failures.push(message);
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message } }));
        }
      });
    });
    this.server.on('connection', () => this.connections++);
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server!.close(() => done()));
    this.server = undefined;
  }
}

const model = new ScriptedModel(settings.llmReply);

/** The llm.agent of the llm phase; each execution's input carries an id the fake keys its time by. */
function llmCase(prefix: string): AgentCase {
  return {
    label: 'llm.agent (3 turns)',
    definition: async (client) => {
      const install = await client.request('POST', '/api/plugins/llm/install', { config: { baseUrl: model.baseUrl, defaultModel: MODEL } });
      if (install.status !== 201) throw unexpected('llm plugin install', install.status, install.body);
      return {
        name: 'bench-llm',
        kind: 'llm.agent',
        config: { systemPrompt: 'You are a benchmark. Call the tools you are told to.', tools: [TOOL], maxTurns: 5 },
      };
    },
    input: (i) => ({ input: { text: 'hello', id: `${prefix}${i}` } }),
    checkOutput: (output) =>
      field(output, 'text') === LLM_ANSWER && field(output, 'turns') === LLM_TURNS && field(output, 'toolCalls') === LLM_TURNS - 1
        ? null
        : `output ${brief(output)}`,
  };
}

const LLM_ENV = { OUTBOUND_ALLOWLIST: '127.0.0.1' };

/** Where the time of one conversation went, ms. */
interface ConversationTimes {
  durationMs: number;
  /** What the fake measured for its three requests. */
  fakeMs: number;
  /** Σ turn startedAt → finishedAt: the model calls as the service timed them. */
  modelCallsMs: number;
  /** Σ tool call startedAt → finishedAt. */
  toolCallsMs: number;
}

interface TranscriptTurn {
  startedAt: string;
  finishedAt: string;
  toolCalls: Array<{ startedAt: string; finishedAt: string | null }>;
}

/** The transcript of one finished conversation, with what the fake measured for it. */
async function conversationTimes(
  client: JsonClient,
  agentId: string,
  executionId: string,
  conversation: string,
): Promise<ConversationTimes> {
  const res = await client.request('GET', `/api/agents/${agentId}/history/${executionId}`);
  const turns = field(field(field(res.body, 'conversation'), 'transcript'), 'data') as TranscriptTurn[] | undefined;
  const durationMs = field(res.body, 'durationMs');
  if (res.status !== 200 || !Array.isArray(turns) || turns.length !== LLM_TURNS || typeof durationMs !== 'number')
    throw unexpected(`GET execution ${executionId}`, res.status, res.body);
  const span = (from: string, to: string | null) => (to ? Date.parse(to) - Date.parse(from) : NaN);
  const fakeMs = model.spentMs.get(conversation);
  if (fakeMs === undefined) throw new Error(`the fake has no time for conversation ${conversation}`);
  return {
    durationMs,
    fakeMs,
    modelCallsMs: turns.reduce((sum, t) => sum + span(t.startedAt, t.finishedAt), 0),
    toolCallsMs: turns.reduce((sum, t) => sum + t.toolCalls.reduce((s, c) => s + span(c.startedAt, c.finishedAt), 0), 0),
  };
}

/** What the llm phase found beyond its rows. */
interface LlmCheck {
  times: ConversationTimes[];
  transformDurations: number[];
  overheadPerTurn: { p50: number; p99: number; mean: number };
  drainRatio: number;
  /** Requests the scripted model answered during the measured sequential executions, and the connections they came on. */
  model: { requests: number; connections: number };
}

/**
 * Phase 3a: sequential conversations (and plain transform executions, alternating with them) on
 * one APP_ROLE=all process, then the transcript of each.
 */
async function llmSequential(): Promise<{
  rows: Row[];
  times: ConversationTimes[];
  transformDurations: number[];
  model: { requests: number; connections: number };
}> {
  const databaseUrl = await databases.create('llm_sync');
  log('llm: starting one APP_ROLE=all process, OUTBOUND_ALLOWLIST=127.0.0.1');
  const service = await services.start(
    'service (llm)',
    { ...serviceEnv(credentials, databaseUrl, 'all'), ...LLM_ENV },
    settings.readyTimeoutMs,
  );
  const { client, agentId: llmAgentId } = await prepareAgent(service, llmCase('s'));
  const transform = await client.request('POST', '/api/agents', await TRANSFORM.definition(client));
  const transformId = field(transform.body, 'id');
  if (transform.status !== 201 || typeof transformId !== 'string') throw unexpected('agent creation', transform.status, transform.body);

  // Each call keeps the execution id it made, so its transcript and duration can be read afterwards.
  const llm = llmCase('s');
  const llmRuns: Array<{ executionId: string; conversation: string }> = [];
  const transformRuns: string[] = [];
  let n = 0;
  const calls = {
    'llm.agent': async (): Promise<string | null> => {
      const body = llm.input(n++);
      const res = await client.request('POST', `/api/agents/${llmAgentId}/execute?wait=30`, body);
      if (res.status !== 200 || field(res.body, 'status') !== 'succeeded') return `HTTP ${res.status} ${brief(res.body)}`;
      const problem = llm.checkOutput(field(res.body, 'output'));
      if (problem) return problem;
      llmRuns.push({ executionId: field(res.body, 'id') as string, conversation: field(body.input, 'id') as string });
      return null;
    },
    transform: async (): Promise<string | null> => {
      const res = await client.request('POST', `/api/agents/${transformId}/execute?wait=30`, TRANSFORM.input(0));
      if (res.status !== 200 || field(res.body, 'status') !== 'succeeded') return `HTTP ${res.status} ${brief(res.body)}`;
      transformRuns.push(field(res.body, 'id') as string);
      return TRANSFORM.checkOutput(field(res.body, 'output'));
    },
  };
  log(`llm: warming up with ${settings.llmWarmup} executions of each agent`);
  const warm = await runInterleaved(calls, 1, settings.llmWarmup, LLM_CHUNK, interrupted.signal);
  for (const [name, result] of Object.entries(warm)) reportErrors(`llm warm-up (${name})`, result);
  if (model.failures.length) throw new Error(`the scripted model refused requests: ${model.failures.join('; ')}`);
  llmRuns.splice(0);
  transformRuns.splice(0);

  log(`llm: ${settings.llmSequential} sequential executions of each agent, 1 client, interleaved`);
  const before = { requests: model.requests, connections: model.connections };
  const measured = await runInterleaved(calls, 1, settings.llmSequential, LLM_CHUNK, interrupted.signal);
  const modelLoad = { requests: model.requests - before.requests, connections: model.connections - before.connections };
  log(`llm: reading ${llmRuns.length} transcripts`);
  const times: ConversationTimes[] = [];
  for (const run of llmRuns) times.push(await conversationTimes(client, llmAgentId, run.executionId, run.conversation));
  const transformDurations: number[] = [];
  for (const id of transformRuns) {
    const res = await client.request('GET', `/api/agents/${transformId}/history/${id}`);
    transformDurations.push(field(res.body, 'durationMs') as number);
  }
  services.assertAlive();
  await services.stopAll();
  return {
    rows: [
      loadRow('llm: sync execute ?wait=30, 1 client, llm.agent (3 turns)', measured['llm.agent']),
      loadRow('llm: sync execute ?wait=30, 1 client, transform.jsonata', measured.transform),
    ],
    times,
    transformDurations,
    model: modelLoad,
  };
}

/** Phase 3: the llm.agent's overhead per turn, sequentially, and its drain against the plain transform drain. */
async function llmPhase(): Promise<{ rows: Row[]; llm: LlmCheck }> {
  await model.start();
  log(`llm: scripted model at ${model.baseUrl} (${settings.llmReply} replies)`);
  try {
    const sequential = await llmSequential();
    const overheads = sequential.times.map((t) => (t.durationMs - t.fakeMs) / LLM_TURNS);
    const overheadRow: Row = {
      scenario: 'llm: overhead per turn ((duration − fake) / 3)',
      count: overheads.length,
      errors: 0,
      ...summarize(overheads),
      throughput: NaN,
      wallSeconds: NaN,
    };
    if (interrupted.signal.aborted) throw new Error('interrupted');
    const plain = await drainPhase({
      name: 'llm_drain_transform',
      rowPrefix: 'llm: transform.jsonata, ',
      workers: 1,
      agentCase: TRANSFORM,
      count: settings.llmExecutions,
      extraEnv: LLM_ENV,
    });
    if (interrupted.signal.aborted) throw new Error('interrupted');
    const conversations = await drainPhase({
      name: 'llm_drain_agent',
      rowPrefix: 'llm: llm.agent 3 turns, ',
      workers: 1,
      agentCase: llmCase('d'),
      count: settings.llmExecutions,
      extraEnv: LLM_ENV,
    });
    if (model.failures.length) throw new Error(`the scripted model refused requests: ${model.failures.join('; ')}`);
    const drainRatio = conversations[1].throughput / plain[1].throughput;
    return {
      rows: [...sequential.rows, overheadRow, ...plain, ...conversations],
      llm: {
        times: sequential.times,
        transformDurations: sequential.transformDurations,
        overheadPerTurn: summarize(overheads),
        drainRatio,
        model: sequential.model,
      },
    };
  } finally {
    await model.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

/** What a phase adds to the report. */
interface Outcome {
  rows: Row[];
  llm?: LlmCheck;
}

function printReport(outcomes: Outcome[]): void {
  const rows = outcomes.flatMap((o) => o.rows);
  const llm = outcomes.find((o) => o.llm)?.llm;
  const out: string[] = ['', machineLine('Agent execution benchmark'), ''];
  out.push(...formatRows(rows, 'requests/executions'));
  out.push(
    '',
    'sync rows: request latency; enqueue rows: request latency, throughput = enqueue rate, wall = enqueue time;',
    'drain rows: p50/p99/mean = per-execution run time (started_at → finished_at),',
    '            throughput = succeeded / (max(finished_at) − min(started_at)), wall = worker spawn → all final (incl. boot).',
    ...(llm
      ? [
          'llm overhead row: per conversation, (execution durationMs − the time the scripted model spent on its 3 requests) / 3.',
          '',
          ...llmLines(llm),
        ]
      : []),
    '',
    ...targetLines(rows, llm),
    '',
  );
  process.stdout.write(out.join('\n'));
}

/** Where a conversation's time went, p50 and p99 of each part per conversation. */
function llmLines(llm: LlmCheck): string[] {
  const parts: Array<[string, number[]]> = [
    ['execution durationMs', llm.times.map((t) => t.durationMs)],
    ['  model calls, as the loop timed them (Σ turn startedAt → finishedAt)', llm.times.map((t) => t.modelCallsMs)],
    ['    of which the scripted model (request received → answer written)', llm.times.map((t) => t.fakeMs)],
    ['  turn commits and tool calls (Σ call startedAt → finishedAt)¹', llm.times.map((t) => t.toolCallsMs)],
    ['  the rest²', llm.times.map((t) => t.durationMs - t.modelCallsMs - t.toolCallsMs)],
    ['plain transform.jsonata execution durationMs (same process, interleaved)', llm.transformDurations],
  ];
  const width = Math.max(...parts.map(([name]) => name.length));
  return [
    `Where a 3-turn conversation's time goes (ms per conversation, ${llm.times.length} conversations; timestamps have ms resolution):`,
    ...parts.map(([name, values]) => {
      const s = summarize(values);
      return `  ${name.padEnd(width)}  p50 ${fixed(s.p50, 2).padStart(7)}  p99 ${fixed(s.p99, 2).padStart(7)}  mean ${fixed(s.mean, 2).padStart(7)}`;
    }),
    "  ¹ a call starts when its turn's reply is in, so this is the turn's commit (and its signal) followed by the tool's run;",
    "  ² the journal's load, the last turn's commit, each call's commit, the tools' resolution, the execution's start and finish.",
    `The scripted model answered ${llm.model.requests} requests on ${llm.model.connections} connections during the sequential executions.`,
  ];
}

function targetLines(rows: Row[], llm: LlmCheck | undefined): string[] {
  const serial = rows.find((r) => r.scenario.endsWith('1 client, threads'));
  const inline = rows.find((r) => r.scenario.endsWith('1 client, inline'));
  const drains = rows.filter((r) => r.scenario.startsWith('async drain'));
  return [
    ...(serial && inline
      ? [`Sandbox cost per sync execution, 1 client: p50 ${fixed(serial.p50 - inline.p50, 2)} ms (threads − inline; ≤ 1 ms wanted)`]
      : []),
    'Targets (sandboxed):',
    ...(serial
      ? [
          `  sync, 1 client: p50 ≤ ${TARGETS.syncP50Ms} ms → ${fixed(serial.p50, 2)} ms ${verdict(serial.p50 <= TARGETS.syncP50Ms)}; ` +
            `p99 ≤ ${TARGETS.syncP99Ms} ms → ${fixed(serial.p99, 2)} ms ${verdict(serial.p99 <= TARGETS.syncP99Ms)}`,
        ]
      : []),
    ...drains.map(
      (r) =>
        `  ${r.scenario}: ≥ ${TARGETS.asyncPerSecond} executions/s → ${fixed(r.throughput, 1)} ${verdict(r.throughput >= TARGETS.asyncPerSecond)}`,
    ),
    ...(llm
      ? [
          `  llm.agent overhead per turn: p50 ≤ ${TARGETS.llmOverheadPerTurnP50Ms} ms → ${fixed(llm.overheadPerTurn.p50, 2)} ms ` +
            `${verdict(llm.overheadPerTurn.p50 <= TARGETS.llmOverheadPerTurnP50Ms)} (p99 ${fixed(llm.overheadPerTurn.p99, 2)} ms)`,
          `  llm.agent 3-turn drain / transform drain: ≥ ${TARGETS.llmToTransformDrainRatio * 100} % → ${fixed(llm.drainRatio * 100, 1)} % ` +
            `${verdict(llm.drainRatio >= TARGETS.llmToTransformDrainRatio)}`,
        ]
      : []),
  ];
}

// ---------------------------------------------------------------------------------------------
// Main

const cleanup = cleanupOnce(services, databases, () => model.close());

const PHASE_RUNS: Record<Phase, () => Promise<Outcome>> = {
  sync: async () => ({ rows: await syncPhase() }),
  async: async () => {
    const rows = await asyncPhase(1);
    if (interrupted.signal.aborted) throw new Error('interrupted');
    return { rows: [...rows, ...(await asyncPhase(2))] };
  },
  llm: llmPhase,
};

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const outcomes: Outcome[] = [];
  for (const phase of settings.phases) {
    if (interrupted.signal.aborted) throw new Error('interrupted');
    outcomes.push(await PHASE_RUNS[phase]());
  }
  printReport(outcomes);
  const errors = outcomes.flatMap((o) => o.rows).reduce((sum, r) => sum + r.errors, 0);
  if (errors) throw new Error(`${errors} request(s)/execution(s) failed; see above`);
});
