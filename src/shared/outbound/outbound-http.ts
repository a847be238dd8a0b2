import { ConnectionPools } from './connection-pools';
import { withDeadline } from './outbound-deadline';
import { exchange } from './outbound-exchange';
import { type AllowList, OutboundError, type OutboundRequest, type OutboundResponse, type Resolver } from './outbound-http.types';
import { parseOutboundUrl, resolveTarget, systemResolver } from './outbound-target';
import { type Hop, nextHop, redirectLocation } from './redirect-policy';

export interface OutboundHttpOptions {
  allowList: AllowList;
  /** Defaults to the system resolver (dns.promises.lookup with all: true). */
  resolver?: Resolver;
}

const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;

/**
 * The one outbound HTTP client. Each hop of a request is checked by the SSRF guard (scheme,
 * credentials, every resolved address) and then connects to the checked address itself.
 * Failures are OutboundErrors; their messages name hosts, never URLs' queries or headers.
 */
export class OutboundHttp {
  private readonly allowList: AllowList;
  private readonly resolver: Resolver;
  private readonly pools = new ConnectionPools();

  constructor(options: OutboundHttpOptions) {
    this.allowList = options.allowList;
    this.resolver = options.resolver ?? systemResolver;
  }

  /**
   * Checks a URL as a request to it would be checked (scheme, credentials, every address it
   * resolves to), without connecting: for a URL saved now and called later. Throws the
   * OutboundError the request would. The check is made again on every request.
   */
  async check(url: string, timeoutMs = 5000): Promise<void> {
    await withDeadline(timeoutMs, undefined, (signal) => resolveTarget(parseOutboundUrl(url), this.allowList, this.resolver, signal));
  }

  async request(req: OutboundRequest): Promise<OutboundResponse> {
    const maxRedirects = Math.max(0, req.maxRedirects ?? DEFAULT_MAX_REDIRECTS);
    const maxResponseBytes = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const follows = (status: number, headers: Record<string, string>) => maxRedirects > 0 && redirectLocation(status, headers) !== null;
    let hop: Hop = { url: parseOutboundUrl(req.url), method: req.method.toUpperCase(), headers: req.headers ?? {}, body: req.body };

    return withDeadline(req.timeoutMs, req.signal, async (signal) => {
      for (let redirects = 0; ; redirects++) {
        const target = await resolveTarget(hop.url, this.allowList, this.resolver, signal);
        const keepBody = (status: number, headers: Record<string, string>) => !follows(status, headers);
        const agent = req.keepAlive ? this.pools.for(target) : undefined;
        const response = await exchange(
          target,
          { ...hop, maxResponseBytes, keepBody, agent, onHead: req.onHead, onBody: req.onBody },
          signal,
        );
        if (!follows(response.status, response.headers)) return response;
        if (redirects >= maxRedirects) throw new OutboundError('TOO_MANY_REDIRECTS', `More than ${maxRedirects} redirects`);
        hop = nextHop(hop, response.status, response.headers.location);
      }
    });
  }
}
