import type { Agent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { OutboundError, type OutboundResponse } from './outbound-http.types';
import type { OutboundTarget, ResolvedAddress } from './outbound-target';

export interface ExchangeInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  maxResponseBytes: number;
  /** False for a response whose body nobody will read (a redirect being followed). */
  keepBody: (status: number, headers: Record<string, string>) => boolean;
  /** Sees the status and headers of a response whose body is kept, before its body is read. */
  onHead?: (status: number, headers: Record<string, string>) => void;
  /** Sees each chunk of a body that is kept, as it arrives. */
  onBody?: (chunk: Buffer) => void;
  /** A pool of kept-alive connections to this target; without one, a fresh socket closed after the response. */
  agent?: Agent;
}

/**
 * One request and its response, over a socket to the target's checked addresses only (fresh,
 * or from a pool kept for exactly those addresses):
 * the lookup Node would do is replaced by one that answers with those addresses, so a second
 * DNS answer (rebinding) never reaches the socket. Host header and TLS SNI keep the host name.
 */
export async function exchange(target: OutboundTarget, init: ExchangeInit, signal: AbortSignal): Promise<OutboundResponse> {
  try {
    return await exchangeOnce(target, init, signal);
  } catch (error) {
    if (!(error instanceof StaleSocket)) throw error;
    // A pooled connection the receiver had just closed as idle (its keep-alive timeout, e.g.
    // Node's 5 s, racing our reuse): the request never reached it, so it goes again, once, on a
    // fresh connection (the pool's other idle ones are older still).
    return exchangeOnce(target, { ...init, agent: undefined }, signal);
  }
}

/**
 * A request on a reused pooled socket that failed with a reset before any byte of a response:
 * the receiver closed the idle connection as the request was written.
 */
class StaleSocket extends Error {}

const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

function exchangeOnce(target: OutboundTarget, init: ExchangeInit, signal: AbortSignal): Promise<OutboundResponse> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest;
    // An explicit length frames the body on every method (Node does not for a DELETE body).
    const length = init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) };
    const request = send(target.url, {
      method: init.method,
      headers: { ...init.headers, ...length },
      agent: init.agent ?? false,
      lookup: pinnedLookup(target.addresses),
      ...(isIP(target.hostname) === 0 ? { servername: target.hostname } : {}),
    });
    const fail = (error: Error) => {
      signal.removeEventListener('abort', onAbort);
      request.destroy();
      reject(error);
    };
    const onAbort = () => fail(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    let answered = false;
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale = request.reusedSocket && !answered && STALE_SOCKET_CODES.has(error.code ?? '');
      fail(stale ? new StaleSocket(error.message) : connectFailed(target, error));
    });
    request.on('response', (response) => {
      answered = true;
      const headers = flattenHeaders(response.headers);
      const status = response.statusCode ?? 0;
      const keep = init.keepBody(status, headers);
      if (keep) init.onHead?.(status, headers);
      const body = keep ? readCapped(response, init.maxResponseBytes, init.onBody) : discard(response);
      body.then((bytes) => {
        signal.removeEventListener('abort', onAbort);
        resolve({ status, headers, body: bytes, url: target.url.href });
      }, fail);
    });
    request.end(init.body);
  });
}

function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  };
}

/**
 * Reads the body up to `max` bytes, handing each chunk to `onBody`; past the cap, or when
 * `onBody` throws, destroys the socket instead of reading on.
 */
function readCapped(response: IncomingMessage, max: number, onBody?: (chunk: Buffer) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new OutboundError('RESPONSE_TOO_LARGE', `The response body exceeds ${max} bytes`);
    if (Number(response.headers['content-length']) > max) {
      response.destroy();
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (error: unknown) => {
      response.destroy();
      reject(error as Error);
    };
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) return stop(tooLarge());
      chunks.push(chunk);
      try {
        onBody?.(chunk);
      } catch (error) {
        stop(error);
      }
    });
    response.on('end', () => resolve(Buffer.concat(chunks, size)));
    response.on('error', () => reject(new OutboundError('CONNECT_FAILED', 'The connection closed before the response was complete')));
  });
}

function discard(response: IncomingMessage): Promise<Buffer> {
  response.on('error', () => undefined);
  response.destroy();
  return Promise.resolve(Buffer.alloc(0));
}

/** Header names lowercased; repeated headers (Set-Cookie) joined with ", ". */
function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers)
      .filter((entry): entry is [string, string | string[]] => entry[1] !== undefined)
      .map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(', ') : value]),
  );
}

/** Names the host and the system error code only: request headers may carry secrets. */
function connectFailed(target: OutboundTarget, error: NodeJS.ErrnoException): OutboundError {
  return new OutboundError('CONNECT_FAILED', `Could not connect to ${target.hostname}${error.code ? ` (${error.code})` : ''}`);
}
