import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { LRUCache } from 'lru-cache';
import { canonicalJson } from '../../../../shared/json/canonical-json';
import { OutboundError } from '../../../../shared/outbound/outbound-http.types';
import { ExecutionError } from '../../domain/plugin';
import { fromOutboundError } from '../outbound-error.mapper';
import { withinCall } from './guarded-fetch';

/** Where an MCP server is and how to reach it: what a connection's stored config holds for the client. */
export interface McpEndpoint {
  url: string;
  /** Sent with every request (the values are secrets). */
  headers?: Record<string, string>;
}

/** The most tools read from one server (pages of tools/list followed until then). */
export const MAX_TOOLS = 200;
/** Connections kept open at once, across organizations; the least recently used closes first. */
const MAX_OPEN = 500;
/** A connection unused this long is closed. */
const IDLE_MS = 5 * 60_000;
/** Longest the initialize handshake may take. */
const CONNECT_TIMEOUT_MS = 10_000;

const CLIENT_INFO = { name: 'platform', version: '1.0.0' };

/**
 * MCP clients (the official SDK's), one connected session per server and credentials, reused
 * by every call to that server until it idles out: a call costs one request, not a handshake.
 * A session the server forgot (404) is opened again once. Every request goes through `fetch`
 * (the SSRF-guarded one).
 */
export class McpClients {
  private readonly open = new LRUCache<string, Promise<Client>>({
    max: MAX_OPEN,
    ttl: IDLE_MS,
    updateAgeOnGet: true,
    dispose: (client) => void client.then((c) => c.close()).catch(() => undefined),
  });

  constructor(private readonly fetch: FetchLike) {}

  /** Every tool the server lists (at most MAX_TOOLS), on a session of its own that is closed after. */
  async listTools(endpoint: McpEndpoint, timeoutMs: number): Promise<Tool[]> {
    const deadline = Date.now() + timeoutMs;
    return withinCall({ deadline }, async () => {
      const client = await this.connect(endpoint, timeoutMs);
      try {
        const tools: Tool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: Math.max(1, deadline - Date.now()) });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor && tools.length < MAX_TOOLS);
        return tools.slice(0, MAX_TOOLS);
      } finally {
        await client.close().catch(() => undefined);
      }
    }).catch((error: unknown) => {
      throw asExecutionError(error, AbortSignal.timeout(timeoutMs));
    });
  }

  /** One tools/call, bounded by `signal` and `timeoutMs`; failures are ExecutionErrors. */
  async callTool(
    endpoint: McpEndpoint,
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<CallToolResult> {
    const key = connectionKey(endpoint);
    const deadline = Date.now() + timeoutMs;
    try {
      return await withinCall({ signal, deadline }, async () => {
        for (let attempt = 1; ; attempt++) {
          const client = await this.session(key, endpoint);
          try {
            return (await client.callTool({ name, arguments: args }, undefined, {
              signal,
              timeout: Math.max(1, deadline - Date.now()),
            })) as CallToolResult;
          } catch (error) {
            if (attempt > 1 || !sessionLost(error)) throw error;
            this.open.delete(key);
          }
        }
      });
    } catch (error) {
      throw asExecutionError(error, signal);
    }
  }

  private session(key: string, endpoint: McpEndpoint): Promise<Client> {
    let client = this.open.get(key);
    if (!client) {
      client = this.connect(endpoint, CONNECT_TIMEOUT_MS);
      // A failed connect is forgotten at once: the next call tries again.
      client.catch(() => this.open.get(key) === client && this.open.delete(key));
      this.open.set(key, client);
    }
    return client;
  }

  private async connect(endpoint: McpEndpoint, timeoutMs: number): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: this.fetch,
      requestInit: { headers: endpoint.headers ?? {} },
    });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    await client.connect(transport, { timeout: timeoutMs });
    return client;
  }
}

/** One session per URL and headers: changed credentials open a new one. */
function connectionKey(endpoint: McpEndpoint): string {
  return createHash('sha256')
    .update(canonicalJson({ url: endpoint.url, headers: endpoint.headers ?? {} }))
    .digest('base64url');
}

/** The server no longer knows the session (restarted, expired): 404 on a request that carried one. */
function sessionLost(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404;
}

/**
 * What a failed MCP request means for the step: a refused address or a server that is down or
 * answers errors is retryable (UPSTREAM_ERROR), a protocol error of the tool is not (TOOL_ERROR).
 */
function asExecutionError(error: unknown, signal: AbortSignal): unknown {
  if (error instanceof ExecutionError) return error;
  if (error instanceof OutboundError) return fromOutboundError(error, signal, 'the MCP server');
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return new ExecutionError('AGENT_TIMEOUT', 'The MCP server did not answer in time');
    if (error.code === ErrorCode.ConnectionClosed) return new ExecutionError('UPSTREAM_ERROR', 'The MCP server closed the connection');
    return new ExecutionError('TOOL_ERROR', `The MCP server refused the call: ${clip(error.message)}`);
  }
  if (error instanceof StreamableHTTPError)
    return new ExecutionError('UPSTREAM_ERROR', `The MCP server answered HTTP ${error.code ?? 'error'}`);
  if (signal.aborted) return error;
  // The SDK's own failures (a reply that is not JSON-RPC, an unexpected content type).
  return new ExecutionError('UPSTREAM_ERROR', `The MCP server could not be used: ${clip((error as Error).message ?? String(error))}`);
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}
