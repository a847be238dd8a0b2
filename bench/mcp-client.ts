/**
 * The client phase of `bench:mcp`: a one-step workflow whose step calls a tool of an MCP server
 * (a loopback server built with the official SDK, Streamable HTTP with sessions) against the
 * same workflow whose step is an `http.request` to an equivalent loopback JSON endpoint. Both
 * answer `{ "n": <n> }` for input `{ "n" }`; sync runs (?wait=30) of the two alternate, at 1 and
 * at 10 clients, on one APP_ROLE=all process (OUTBOUND_ALLOWLIST=127.0.0.1 lets the steps reach
 * loopback). Target: the MCP step within 20 % of the HTTP step.
 */
import { createServer } from 'node:http';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AddressInfo } from 'node:net';
import { startMcpServer } from '../test/support/mcp-server';
import {
  brief,
  createWorkflow,
  Credentials,
  field,
  JsonClient,
  loadRow,
  log,
  loginAndInstallTransform,
  reportErrors,
  Row,
  runInterleaved,
  ScratchDatabases,
  serviceEnv,
  Services,
  unexpected,
} from './support';

export interface ClientPhaseContext {
  services: Services;
  databases: ScratchDatabases;
  credentials: Credentials;
  readyTimeoutMs: number;
  signal: AbortSignal;
  warmupRuns: number;
  runs: number;
}

export interface ClientPhaseResult {
  rows: Row[];
  /** MCP step throughput / HTTP step throughput, at 1 and at 10 clients. */
  ratios: Array<{ clients: number; throughput: number; p50: number }>;
}

const NUMBER: Tool['inputSchema'] = { type: 'object', required: ['n'], properties: { n: { type: 'number' } } };

export async function mcpClientPhase(ctx: ClientPhaseContext): Promise<ClientPhaseResult> {
  const mcp = await startMcpServer([
    {
      tool: { name: 'echo', description: 'Answers its arguments', inputSchema: NUMBER },
      call: async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }], structuredContent: args }),
    },
  ]);
  const plain = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  const plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/echo`;
  try {
    const databaseUrl = await ctx.databases.create('mcp_client');
    log('client: starting one APP_ROLE=all process');
    const service = await ctx.services.start(
      'mcp-client',
      { ...serviceEnv(ctx.credentials, databaseUrl, 'all'), OUTBOUND_ALLOWLIST: '127.0.0.1' },
      ctx.readyTimeoutMs,
    );
    const client = await loginAndInstallTransform(service, ctx.credentials);
    await expectStatus(client, 'POST', '/api/plugins/http/install', {}, 201);
    await expectStatus(client, 'POST', '/api/mcp-servers', { name: 'bench', url: mcp.url }, 201);
    const viaMcp = await createWorkflow(client, {
      name: 'bench-mcp-step',
      steps: [{ id: 'call', action: 'mcp.bench.echo', input: '{ "n": input.n }' }],
      output: 'steps.call.output.structuredContent',
    });
    const viaHttp = await createWorkflow(client, {
      name: 'bench-http-step',
      steps: [{ id: 'call', action: 'http.request', with: { method: 'POST', url: plainUrl }, input: '{ "n": input.n }' }],
      output: 'steps.call.output.body',
    });
    const calls = { mcp: () => runEcho(client, viaMcp.id), http: () => runEcho(client, viaHttp.id) };

    log(`client: warming up with ${ctx.warmupRuns} runs of each workflow`);
    const warmup = await runInterleaved(calls, 4, ctx.warmupRuns, 50, ctx.signal);
    for (const [name, result] of Object.entries(warmup)) reportErrors(`client: ${name} warm-up`, result);

    const rows: Row[] = [];
    const ratios: ClientPhaseResult['ratios'] = [];
    for (const clients of [1, 10]) {
      log(`client: ${ctx.runs} runs of each workflow, ${clients} client(s), interleaved`);
      const measured = await runInterleaved(calls, clients, ctx.runs, 100, ctx.signal);
      ctx.services.assertAlive();
      const mcpRow = loadRow(`MCP step (mcp.bench.echo), ${clients} client(s)`, measured.mcp);
      const httpRow = loadRow(`http.request step, ${clients} client(s)`, measured.http);
      rows.push(mcpRow, httpRow);
      ratios.push({ clients, throughput: mcpRow.throughput / httpRow.throughput, p50: mcpRow.p50 / httpRow.p50 });
    }
    log(`client: the MCP server answered ${mcp.calls.length} tool calls`);
    return { rows, ratios };
  } finally {
    await ctx.services.stopAll();
    await mcp.close();
    plain.closeAllConnections();
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  }
}

/** One sync run of an echo workflow with a fresh n; null when its output is `{ n }`. */
async function runEcho(client: JsonClient, workflowId: string): Promise<string | null> {
  const n = Math.floor(Math.random() * 1e9);
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=30`, { input: { n } });
  if (res.status !== 200) return `HTTP ${res.status} ${brief(res.body)}`;
  if (field(res.body, 'status') !== 'succeeded' || field(field(res.body, 'output'), 'n') !== n) return `200 but ${brief(res.body)}`;
  return null;
}

async function expectStatus(client: JsonClient, method: 'POST', path: string, body: unknown, status: number): Promise<void> {
  const res = await client.request(method, path, body);
  if (res.status !== status) throw unexpected(`${method} ${path}`, res.status, res.body);
}
