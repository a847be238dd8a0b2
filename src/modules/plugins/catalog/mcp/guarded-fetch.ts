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

/** Runs `work` outside any call: what it starts is shared by later calls (a pooled session's handshake). */
export function outsideCalls<T>(work: () => Promise<T>): Promise<T> {
  return scopes.exit(work);
}

/**
 * The fetch the MCP SDK is given: every request goes through the platform's outbound client,
 * so the SSRF guard checks each connection (and each redirect the SDK follows: it asks for
 * `redirect: 'manual'` and calls again, which is checked again). Bodies are capped.
 *
 * With `streams: false` (Streamable HTTP) a body is read whole before the response is handed
 * over, and a GET (the optional stream of server-sent notifications) is answered 405 here, as a
 * server without that stream answers: tool calls carry their results in their own responses.
 * With `streams: true` (the older HTTP+SSE transport, whose results come on its GET stream) a
 * response is handed over at its headers and its body streams as it arrives.
 */
export function guardedFetch(client: HttpClient, maxResponseBytes: number, { streams }: { streams: boolean }): FetchLike {
  return async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method === 'GET' && !streams) return new Response(null, { status: 405, statusText: 'Method Not Allowed' });
    const scope = scopes.getStore();
    const stop = new AbortController();
    const signals = [init.signal, scope?.signal, stop.signal].filter((s): s is AbortSignal => !!s);
    const request = {
      method,
      url: String(url),
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      body: typeof init.body === 'string' ? init.body : undefined,
      signal: AbortSignal.any(signals),
      timeoutMs: Math.max(1, (scope?.deadline ?? Date.now() + DEFAULT_TIMEOUT_MS) - Date.now()),
      maxResponseBytes,
      maxRedirects: init.redirect === 'manual' ? 0 : 5,
      keepAlive: !streams,
    };
    if (!streams) {
      const response = await client.request(request);
      return new Response(hasBody(response.status, method) ? new Uint8Array(response.body) : null, {
        status: response.status,
        headers: response.headers,
      });
    }
    return new Promise<Response>((resolve, reject) => {
      let body!: ReadableStreamDefaultController<Uint8Array>;
      let open = true;
      /** Once the reader cancelled or the body ended, nothing more reaches the stream. */
      const settle = (end: (controller: ReadableStreamDefaultController<Uint8Array>) => void) => {
        if (open) end(body);
        open = false;
      };
      const stream = new ReadableStream<Uint8Array>({
        start: (controller) => void (body = controller),
        cancel: () => {
          open = false;
          stop.abort();
        },
      });
      client
        .request({
          ...request,
          onHead: (status, headers) => resolve(new Response(hasBody(status, method) ? stream : null, { status, headers })),
          onBody: (chunk) => open && body.enqueue(new Uint8Array(chunk)),
        })
        .then(
          () => settle((controller) => controller.close()),
          (error: unknown) => {
            reject(error as Error);
            settle((controller) => controller.error(error));
          },
        );
    });
  };
}

function hasBody(status: number, method: string): boolean {
  return status !== 204 && status !== 304 && method !== 'HEAD';
}
