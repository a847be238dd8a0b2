import type { BlockList } from 'node:net';

/**
 * The one way the service calls out over HTTP. Every request passes the SSRF guard: the
 * address a name resolves to is checked when the socket connects (so DNS rebinding cannot
 * slip past), redirects are followed by hand and re-checked, and the body read is capped.
 */
export interface OutboundRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** Sent as is; set Content-Type yourself. */
  body?: string | Buffer;
  signal?: AbortSignal;
  timeoutMs: number;
  /** Response bodies larger than this fail with OutboundError('RESPONSE_TOO_LARGE'). */
  maxResponseBytes?: number;
  /** Redirects to follow (each re-checked by the guard); 0 returns the 3xx as is. */
  maxRedirects?: number;
  /**
   * Reuse connections to the same checked addresses (for many requests to one receiver);
   * each request is still checked by the guard first.
   */
  keepAlive?: boolean;
  /** Called with the final response's status and headers as soon as they arrive, before its body. */
  onHead?: (status: number, headers: Record<string, string>) => void;
  /**
   * Called with each body chunk of the final response as it arrives (to read a stream while it
   * lasts); the body is still collected and capped. A throw ends the read and fails the request.
   */
  onBody?: (chunk: Buffer) => void;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered, after redirects. */
  url: string;
}

export type OutboundErrorCode =
  | 'URL_INVALID'
  | 'SCHEME_NOT_ALLOWED'
  | 'ADDRESS_NOT_ALLOWED'
  | 'DNS_FAILED'
  | 'CONNECT_FAILED'
  | 'TIMEOUT'
  | 'ABORTED'
  | 'RESPONSE_TOO_LARGE'
  | 'TOO_MANY_REDIRECTS';

export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

/** Resolves a host name to addresses; injectable so tests can simulate any DNS answer. */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

/**
 * What the guard lets through although it is forbidden (loopback, private, link-local...):
 * parsed from OUTBOUND_ALLOWLIST by parseAllowList().
 */
export interface AllowList {
  /** Host names, lowercased without a trailing dot, trusted whatever they resolve to. */
  readonly hostnames: ReadonlySet<string>;
  /** Single addresses and CIDR ranges. */
  readonly addresses: BlockList;
  /**
   * While it answers true (a trial, TRIAL=true), loopback and private addresses (and `localhost`)
   * are let through as if listed; link-local, cloud metadata and the other ranges are not.
   */
  readonly internalAllowed?: () => boolean;
}
