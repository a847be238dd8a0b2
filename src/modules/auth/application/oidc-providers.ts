import { Injectable } from '@nestjs/common';
import * as client from 'openid-client';
import { allows } from '../../../shared/outbound/address-policy';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { OidcSettings } from '../domain/oidc-settings';

/** How long a provider's discovery document is reused before it is fetched again. */
export const DISCOVERY_TTL_MS = 5 * 60_000;
const TIMEOUT_SECONDS = 10;
const MAX_RESPONSE_BYTES = 1024 * 1024;

interface Discovered {
  key: string;
  metadata: client.ServerMetadata;
  fetchedAt: number;
}

/**
 * openid-client Configurations for the organizations' providers. Every request to a provider
 * (discovery, token, JWKS, userinfo) goes through the outbound HTTP client, so the SSRF guard
 * and OUTBOUND_ALLOWLIST apply; http is allowed only for a host the allow-list names.
 *
 * The discovery document is kept per organization for DISCOVERY_TTL_MS (and dropped when the
 * issuer or client changes). Each sign-in gets a Configuration of its own, so the provider's
 * JWKS is read afresh for each callback: a key the provider rotated in is used at once.
 */
@Injectable()
export class OidcProviders {
  private readonly http: OutboundHttp;
  private readonly discovered = new Map<string, Discovered>();

  constructor(private readonly policy: OutboundPolicy) {
    this.http = new OutboundHttp({ allowList: policy.allowList });
  }

  /**
   * Fetches the issuer's discovery document now (openid-client checks that it names the same
   * issuer); it is kept for the organization's sign-ins. Throws what openid-client or the
   * outbound client throws.
   */
  async discover(organizationId: string, settings: OidcSettings, clientSecret: string): Promise<client.ServerMetadata> {
    const config = await client.discovery(new URL(settings.issuer), settings.clientId, undefined, client.ClientSecretBasic(clientSecret), {
      [client.customFetch]: this.fetch,
      execute: this.insecure(settings.issuer) ? [client.allowInsecureRequests] : [],
      timeout: TIMEOUT_SECONDS,
    });
    const metadata = config.serverMetadata();
    this.discovered.set(organizationId, { key: keyOf(settings), metadata, fetchedAt: Date.now() });
    return metadata;
  }

  /** A Configuration for one sign-in, from the discovery document kept for the organization (fetched when stale). */
  async configuration(organizationId: string, settings: OidcSettings, clientSecret: string): Promise<client.Configuration> {
    const kept = this.discovered.get(organizationId);
    const fresh = kept && kept.key === keyOf(settings) && Date.now() - kept.fetchedAt <= DISCOVERY_TTL_MS;
    const metadata = fresh ? kept.metadata : await this.discover(organizationId, settings, clientSecret);
    const config = new client.Configuration(metadata, settings.clientId, undefined, authFor(metadata, clientSecret));
    config[client.customFetch] = this.fetch;
    config.timeout = TIMEOUT_SECONDS;
    if (this.insecure(settings.issuer)) client.allowInsecureRequests(config);
    return config;
  }

  forget(organizationId: string): void {
    this.discovered.delete(organizationId);
  }

  /** http is for providers on hosts the allow-list names (an internal IdP, the tests' provider on loopback). */
  private insecure(issuer: string): boolean {
    const url = new URL(issuer);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return url.protocol === 'http:' && allows(this.policy.allowList, { hostname: host, address: host });
  }

  /** openid-client's fetch, through the outbound HTTP client (redirects are openid-client's to refuse, as fetch's 'manual'). */
  private readonly fetch: client.CustomFetch = async (url, options) => {
    const headers: Record<string, string> = {};
    new Headers(options.headers).forEach((value, name) => (headers[name] = value));
    const response = await this.http.request({
      method: options.method,
      url,
      headers,
      body: bodyOf(options.body),
      signal: options.signal,
      timeoutMs: TIMEOUT_SECONDS * 1000,
      maxRedirects: 0,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
    const empty = response.status === 204 || response.status === 304;
    return new Response(empty ? null : new Uint8Array(response.body), { status: response.status, headers: response.headers });
  };
}

/** Whether an error is the provider's or its answer's (a refused sign-in), not ours. */
export function isProviderError(error: unknown): error is Error {
  return (
    error instanceof client.ClientError ||
    error instanceof client.ResponseBodyError ||
    error instanceof client.AuthorizationResponseError ||
    error instanceof client.WWWAuthenticateChallengeError ||
    error instanceof OutboundError ||
    (error instanceof TypeError && typeof (error as { code?: unknown }).code === 'string')
  );
}

/** client_secret_basic unless the provider says it takes client_secret_post only. */
function authFor(metadata: client.ServerMetadata, clientSecret: string): client.ClientAuth {
  const methods = metadata.token_endpoint_auth_methods_supported;
  return methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
    ? client.ClientSecretPost(clientSecret)
    : client.ClientSecretBasic(clientSecret);
}

function keyOf(settings: OidcSettings): string {
  return `${settings.issuer}\n${settings.clientId}`;
}

function bodyOf(body: client.CustomFetchOptions['body']): string | Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof URLSearchParams) return body.toString();
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('Unsupported request body for an OIDC provider');
}
