/**
 * MCP benchmark: the built service (dist/src/main.js) against a scratch PostgreSQL database per
 * phase, on one APP_ROLE=all process.
 *
 *   server: a one-step transform workflow (exposed to MCP) called through POST /api/mcp
 *           (tools/call, with the official SDK's client, one connected client per caller)
 *           against the same run through POST /api/workflows/:id/run?wait=30, calls of the two
 *           interleaved, at 1 and at 10 callers; calls/s and p50/p99 latency;
 *   client: a one-step workflow whose step calls a loopback MCP server's tool against one whose
 *           step is an http.request to an equivalent loopback endpoint (bench/mcp-client.ts).
 *
 * Target on the 2-core machine: each MCP path within 20 % of its REST equivalent.
 *
 * Run with `npm run bench:mcp`. Settings (environment):
 *   DATABASE_URL                 PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_PHASES                 phases to run, comma-separated (server,client)
 *   BENCH_MCP_WARMUP             warm-up calls of each path (200)
 *   BENCH_MCP_CALLS              calls of each path measured at each concurrency (1000)
 *   BENCH_READY_TIMEOUT_SECONDS  longest wait for a process to be ready (120)
 */
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpClientPhase } from './mcp-client';
import {
  brief,
  cleanupOnce,
  createWorkflow,
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
  runBenchmark,
  runInterleaved,
  ScratchDatabases,
  serviceEnv,
  Services,
  verdict,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist/src/main.js');
const settings = {
  serverUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  phases: (process.env.BENCH_PHASES ?? 'server,client').split(',').map((p) => p.trim()),
  warmup: intFromEnv('BENCH_MCP_WARMUP', 200),
  calls: intFromEnv('BENCH_MCP_CALLS', 1000),
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};
const CONCURRENCY = [1, 10];
const TARGET = 0.8;

const credentials = randomCredentials();
const services = new Services(ENTRY, ROOT);
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_mcp_${Date.now()}`);
const interrupted = new AbortController();

/** `{ n }` -> `{ doubled: 2n }`, one transform step, exposed as the MCP tool `workflow_bench_double`. */
const WORKFLOW = {
  name: 'bench double',
  inputSchema: { type: 'object', required: ['n'], properties: { n: { type: 'number' } } },
  mcp: { expose: true },
  steps: [{ id: 'double', action: 'transform.jsonata', with: { expression: '{ "doubled": n * 2 }' } }],
  output: 'steps.double.output',
};

interface Comparison {
  rows: Row[];
  ratios: Array<{ clients: number; throughput: number; p50: number }>;
}

async function serverPhase(): Promise<Comparison> {
  const databaseUrl = await databases.create('mcp_server');
  log('server: starting one APP_ROLE=all process');
  const service = await services.start('mcp-server', serviceEnv(credentials, databaseUrl, 'all'), settings.readyTimeoutMs);
  const client = await loginAndInstallTransform(service, credentials);
  const workflow = await createWorkflow(client, WORKFLOW);
  const mcpClients: Client[] = [];
  try {
    // One connected SDK client per caller, as an IDE agent or another platform keeps one.
    for (let i = 0; i < Math.max(...CONCURRENCY); i++) {
      const mcp = new Client({ name: 'bench', version: '1.0.0' });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${service.port}/api/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${client.token}` } },
        }),
      );
      mcpClients.push(mcp);
    }
    let next = 0;
    const viaMcp = async (): Promise<string | null> => {
      const mcp = mcpClients[next++ % mcpClients.length];
      const n = Math.floor(Math.random() * 1e6);
      const result = (await mcp.callTool({ name: 'workflow_bench_double', arguments: { n } })) as CallToolResult;
      if (result.isError || field(result.structuredContent, 'doubled') !== n * 2) return `tools/call answered ${brief(result)}`;
      return null;
    };
    const viaRest = () => runDouble(client, workflow.id);
    const calls = { mcp: viaMcp, rest: viaRest };
    log(`server: warming up with ${settings.warmup} calls of each path`);
    const warmup = await runInterleaved(calls, 4, settings.warmup, 50, interrupted.signal);
    for (const [name, result] of Object.entries(warmup)) reportErrors(`server: ${name} warm-up`, result);
    const rows: Row[] = [];
    const ratios: Comparison['ratios'] = [];
    for (const clients of CONCURRENCY) {
      log(`server: ${settings.calls} calls of each path, ${clients} caller(s), interleaved`);
      const measured = await runInterleaved(calls, clients, settings.calls, 100, interrupted.signal);
      services.assertAlive();
      const mcpRow = loadRow(`tools/call via /api/mcp, ${clients} caller(s)`, measured.mcp);
      const restRow = loadRow(`POST /run?wait=30, ${clients} caller(s)`, measured.rest);
      rows.push(mcpRow, restRow);
      ratios.push({ clients, throughput: mcpRow.throughput / restRow.throughput, p50: mcpRow.p50 / restRow.p50 });
    }
    return { rows, ratios };
  } finally {
    await Promise.all(mcpClients.map((c) => c.close().catch(() => undefined)));
    await services.stopAll();
  }
}

async function runDouble(client: JsonClient, workflowId: string): Promise<string | null> {
  const n = Math.floor(Math.random() * 1e6);
  const res = await client.request('POST', `/api/workflows/${workflowId}/run?wait=30`, { input: { n } });
  if (res.status !== 200 || field(field(res.body, 'output'), 'doubled') !== n * 2) return `HTTP ${res.status} ${brief(res.body)}`;
  return null;
}

function report(title: string, comparison: Comparison, against: string): void {
  console.log(`\n${title}`);
  for (const line of formatRows(comparison.rows, 'calls', { throughput: 'calls/s' })) console.log(line);
  for (const { clients, throughput, p50 } of comparison.ratios)
    console.log(
      `  ${clients} caller(s): MCP at ${fixed(throughput * 100, 1)} % of ${against}'s throughput, p50 ${fixed(p50 * 100, 1)} % of its p50 ` +
        `(target ≥ ${TARGET * 100} %: ${verdict(throughput >= TARGET)})`,
    );
}

runBenchmark(ENTRY, interrupted, cleanupOnce(services, databases), async () => {
  console.log(machineLine('bench:mcp'));
  if (settings.phases.includes('server')) report('server: /api/mcp against the REST run', await serverPhase(), 'REST');
  if (settings.phases.includes('client')) {
    const client = await mcpClientPhase({
      services,
      databases,
      credentials,
      readyTimeoutMs: settings.readyTimeoutMs,
      signal: interrupted.signal,
      warmupRuns: settings.warmup,
      runs: settings.calls,
    });
    report('client: an MCP step against an http.request step', client, 'http.request');
  }
});
