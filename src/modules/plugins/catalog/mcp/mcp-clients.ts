import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { LRUCache } from 'lru-cache';
import { canonicalJson } from '../../../../shared/json/canonical-json';
import { OutboundError } from '../../../../shared/outbound/outbound-http.types';
import { ExecutionError } from '../../domain/plugin';
import { fromOutboundError } from '../outbound-error.mapper';
import type { HttpClient } from '../http-client';
import { guardedFetch, outsideCalls, withinCall } from './guarded-fetch';

/** Where an MCP server is and how to reach it: what a connection's stored config holds for the client. */
export interface McpEndpoint {
  url: string;
  /** `streamable-http` (the default) or the older `sse` (HTTP+SSE). */
  transport?: McpTransport;
  /** Sent with every request (the values are secrets). */
  headers?: Record<string, string>;
}

export const MCP_TRANSPORTS = ['streamable-http', 'sse'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

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
 * MCP clients (the official SDK's). Over Streamable HTTP, one connected session per server and
 * credentials is reused by every call to that server until it idles out: a call costs one
 * request, not a handshake; a session the server forgot (404) is opened again once. Over the
 * older HTTP+SSE transport a session holds a stream open, so each call opens its own and
 * closes it after. Every request goes through the SSRF-guarded fetch.
 */
export class McpClients {
  private readonly open = new LRUCache<string, Promise<Client>>({
    max: MAX_OPEN,
    ttl: IDLE_MS,
    updateAgeOnGet: true,
    dispose: (client) => void client.then((c) => c.close()).catch(() => undefined),
  });

  private readonly fetch: FetchLike;
  private readonly streamingFetch: FetchLike;

  constructor(http: HttpClient, maxResponseBytes: number) {
    this.fetch = guardedFetch(http, maxResponseBytes, { streams: false });
    this.streamingFetch = guardedFetch(http, maxResponseBytes, { streams: true });
  }

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

  /**
   * One tools/call for `organizationId`, bounded by `signal` and `timeoutMs`; failures are
   * ExecutionErrors. Sessions are never shared between organizations: a server may keep state
   * per session.
   */
  async callTool(
    organizationId: string,
    endpoint: McpEndpoint,
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<CallToolResult> {
    const key = connectionKey(organizationId, endpoint);
    const deadline = Date.now() + timeoutMs;
    try {
      return await withinCall({ signal, deadline }, async () => {
        if (endpoint.transport === 'sse') return await this.callOnce(endpoint, name, args, signal, deadline);
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

  /** A call on a session of its own, closed after (HTTP+SSE). */
  private async callOnce(endpoint: McpEndpoint, name: string, args: Record<string, unknown>, signal: AbortSignal, deadline: number) {
    const client = await this.connect(endpoint, Math.max(1, Math.min(CONNECT_TIMEOUT_MS, deadline - Date.now())));
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: Math.max(1, deadline - Date.now()),
      })) as CallToolResult;
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  private session(key: string, endpoint: McpEndpoint): Promise<Client> {
    let client = this.open.get(key);
    if (!client) {
      // Shared by every call that comes while it connects: no one call's cancel may end it.
      client = outsideCalls(() => this.connect(endpoint, CONNECT_TIMEOUT_MS));
      // A failed connect is forgotten at once: the next call tries again.
      client.catch(() => this.open.get(key) === client && this.open.delete(key));
      this.open.set(key, client);
    }
    return client;
  }

  private async connect(endpoint: McpEndpoint, timeoutMs: number): Promise<Client> {
    const requestInit = { headers: endpoint.headers ?? {} };
    const transport: Transport =
      endpoint.transport === 'sse'
        ? new SSEClientTransport(new URL(endpoint.url), { fetch: this.streamingFetch, requestInit })
        : new StreamableHTTPClientTransport(new URL(endpoint.url), { fetch: this.fetch, requestInit });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    await client.connect(transport, { timeout: timeoutMs });
    return client;
  }
}

/** One session per organization, URL, transport and headers: changed credentials open a new one. */
function connectionKey(organizationId: string, endpoint: McpEndpoint): string {
  return createHash('sha256')
    .update(organizationId)
    .update(canonicalJson({ url: endpoint.url, transport: endpoint.transport ?? 'streamable-http', headers: endpoint.headers ?? {} }))
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
