import { AsyncLocalStorage } from 'node:async_hooks';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { HttpClient } from '../http-client';

/** The call a request belongs to: its cancellation and deadline reach the HTTP request. */
export interface CallScope {
  signal?: AbortSignal;
  /** Epoch ms. */
  deadline: number;
}

const scopes = new AsyncLocalStorage<CallScope>();

/** Runs `work` with its outbound requests bound to `scope` (the SDK's own requests carry no signal of the call). */
export function withinCall<T>(scope: CallScope, work: () => Promise<T>): Promise<T> {
  return scopes.run(scope, work);
}

/** Longest an MCP request may take when it runs outside any call (tools/list). */
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The fetch the MCP SDK is given: every request goes through the platform's outbound client,
 * so the SSRF guard checks each connection (and each redirect the SDK follows: it asks for
 * `redirect: 'manual'` and calls again, which is checked again). Bodies are read whole and
 * capped; a GET (the optional stream of server-sent notifications) is answered 405 here, as a
 * server without that stream answers: tool calls carry their results in their own responses.
 */
export function guardedFetch(client: HttpClient, maxResponseBytes: number): FetchLike {
  return async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method === 'GET') return new Response(null, { status: 405, statusText: 'Method Not Allowed' });
    const scope = scopes.getStore();
    const signals = [init.signal, scope?.signal].filter((s): s is AbortSignal => !!s);
    const response = await client.request({
      method,
      url: String(url),
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body: typeof init.body === 'string' ? init.body : undefined,
      signal: signals.length ? AbortSignal.any(signals) : undefined,
      timeoutMs: Math.max(1, (scope?.deadline ?? Date.now() + DEFAULT_TIMEOUT_MS) - Date.now()),
      maxResponseBytes,
      maxRedirects: init.redirect === 'manual' ? 0 : 5,
      keepAlive: true,
    });
    const empty = response.status === 204 || response.status === 304 || method === 'HEAD';
    return new Response(empty ? null : new Uint8Array(response.body), { status: response.status, headers: response.headers });
  };
}
