import { parseOutboundUrl } from './outbound-target';

/** One request of a redirect chain. */
export interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Caller headers carried to another origin; anything else may be a credential for this one. */
const CROSS_ORIGIN_HEADERS = new Set(['accept', 'accept-language', 'content-language', 'content-type', 'user-agent']);
const BODY_HEADERS = new Set(['content-length', 'content-type', 'content-encoding', 'content-language', 'transfer-encoding']);

/** The Location of a redirect to follow, or null when the response is the answer. */
export function redirectLocation(status: number, headers: Record<string, string>): string | null {
  return REDIRECT_STATUSES.has(status) && headers.location ? headers.location : null;
}

/**
 * The request a redirect asks for: 303 (and 301/302 after a POST) turn into a GET without
 * body; a new origin gets none of the caller's headers that might authenticate it.
 */
export function nextHop(current: Hop, status: number, location: string): Hop {
  const url = parseOutboundUrl(location, current.url);
  const toGet = status === 303 ? current.method !== 'HEAD' : (status === 301 || status === 302) && current.method === 'POST';
  const keep = (name: string) =>
    (url.origin === current.url.origin || CROSS_ORIGIN_HEADERS.has(name.toLowerCase())) && !(toGet && BODY_HEADERS.has(name.toLowerCase()));
  const headers = Object.fromEntries(Object.entries(current.headers).filter(([name]) => keep(name)));
  return toGet ? { url, method: 'GET', headers } : { url, method: current.method, headers, body: current.body };
}
