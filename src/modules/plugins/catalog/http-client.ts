import type { OutboundRequest, OutboundResponse } from '../../../shared/outbound/outbound-http.types';

/**
 * What plugins need from the outbound HTTP client. `OutboundHttp` (shared/outbound) satisfies
 * it and applies the SSRF guard; plugins take it as a factory argument so tests can pass any
 * real implementation. Failures are `OutboundError`s.
 */
export interface HttpClient {
  request(req: OutboundRequest): Promise<OutboundResponse>;
}

/** Largest response body a plugin reads (1 MiB). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
