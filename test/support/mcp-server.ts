import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';

export interface ScriptedTool {
  tool: Tool;
  call(args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

export interface LoopbackMcpServer {
  /** `http://127.0.0.1:<port>/mcp`: Streamable HTTP. */
  url: string;
  /** `http://127.0.0.1:<port>/sse`: the older HTTP+SSE transport (its messages are POSTed to /messages). */
  sseUrl: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** The tools it lists now; change it to change what tools/list answers. */
  tools: Map<string, ScriptedTool>;
  /** Each tools/call received: tool name, arguments, and the headers of its request. */
  calls: Array<{ name: string; arguments: Record<string, unknown>; headers: IncomingMessage['headers'] }>;
  /** Every HTTP request, method and path with its headers. */
  requests: Array<{ method: string; path: string; headers: IncomingMessage['headers'] }>;
  /** Paths answered with a redirect: path -> Location. */
  redirects: Map<string, string>;
  /** Forgets every session, as a restarted server does (its next request gets 404). */
  forgetSessions(): void;
  close(): Promise<void>;
}

/**
 * A real MCP server on 127.0.0.1, built with the official SDK (Streamable HTTP with sessions,
 * and the older HTTP+SSE transport beside it):
 * the other side of the `mcp` plugin in tests and benchmarks. Its tools are scripted.
 */
export async function startMcpServer(tools: ScriptedTool[]): Promise<LoopbackMcpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const state: Pick<LoopbackMcpServer, 'tools' | 'calls' | 'requests' | 'redirects'> = {
    tools: new Map(tools.map((t) => [t.tool.name, t])),
    calls: [],
    requests: [],
    redirects: new Map(),
  };

  const sseSessions = new Map<string, SSEServerTransport>();

  function newServer(): Server {
    const server = new Server({ name: 'loopback-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...state.tools.values()].map((t) => t.tool) }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const scripted = state.tools.get(request.params.name);
      const args = request.params.arguments ?? {};
      state.calls.push({ name: request.params.name, arguments: args, headers: extra.requestInfo?.headers ?? {} });
      if (!scripted) return { isError: true, content: [{ type: 'text', text: `unknown tool ${request.params.name}` }] };
      return scripted.call(args, extra.signal);
    });
    return server;
  }

  function newSession(): StreamableHTTPServerTransport {
    const server = newServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    void server.connect(transport);
    return transport;
  }

  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    state.requests.push({ method: req.method ?? '', path, headers: req.headers });
    const location = state.redirects.get(path);
    if (location) return void res.writeHead(307, { location }).end();
    if (path === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sseSessions.set(transport.sessionId, transport);
      res.on('close', () => sseSessions.delete(transport.sessionId));
      return void newServer().connect(transport);
    }
    if (path === '/messages') {
      const transport = sseSessions.get(new URL(req.url ?? '', 'http://x').searchParams.get('sessionId') ?? '');
      if (!transport) return void res.writeHead(404).end();
      return void transport.handlePostMessage(req, res);
    }
    if (path !== '/mcp') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
      const sessionId = req.headers['mcp-session-id'];
      const transport = typeof sessionId === 'string' ? sessions.get(sessionId) : newSession();
      if (!transport)
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      void transport.handleRequest(req, res, body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    ...state,
    url: `${origin}/mcp`,
    sseUrl: `${origin}/sse`,
    origin,
    forgetSessions: () => sessions.clear(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const transport of sseSessions.values()) void transport.close();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** A tool answering text. */
export function textTool(tool: Tool, answer: (args: Record<string, unknown>) => string): ScriptedTool {
  return { tool, call: async (args) => ({ content: [{ type: 'text', text: answer(args) }] }) };
}
