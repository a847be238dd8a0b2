import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { untilAborted } from '../async/until-aborted';
import { allows, isForbiddenAddress } from './address-policy';
import { type AllowList, OutboundError, type Resolver } from './outbound-http.types';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** A URL that passed the guard, with the addresses the connection must use and no other. */
export interface OutboundTarget {
  url: URL;
  /** The host as the URL names it, IPv6 brackets removed; sent as Host and TLS SNI. */
  hostname: string;
  /** Every address the guard checked; for an IP literal, that IP. */
  addresses: ResolvedAddress[];
}

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * Parses an absolute URL (or a redirect Location against `base`). The WHATWG parser turns
 * every IPv4 spelling (decimal, hex, octal, short) and IPv6 spelling into one canonical form.
 */
export function parseOutboundUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new OutboundError('URL_INVALID', 'The URL does not parse');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundError('SCHEME_NOT_ALLOWED', `Scheme ${url.protocol} is not allowed; use http: or https:`);
  }
  if (url.username !== '' || url.password !== '') throw new OutboundError('URL_INVALID', 'The URL must not carry credentials');
  return url;
}

/**
 * Resolves the URL's host and refuses it when any address is forbidden and not allow-listed:
 * if one answer in a set is internal, the name is treated as internal.
 */
export async function resolveTarget(url: URL, allowList: AllowList, resolver: Resolver, signal: AbortSignal): Promise<OutboundTarget> {
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = ipFamily(hostname);
  const addresses = literal !== null ? [{ address: hostname, family: literal }] : await resolve(hostname, resolver, signal);
  for (const { address } of addresses) {
    if (isForbiddenAddress(address) && !allows(allowList, { hostname, address })) {
      const target = literal !== null ? address : `${hostname} (resolved to ${address})`;
      throw new OutboundError(
        'ADDRESS_NOT_ALLOWED',
        `Outbound requests to ${target} are not allowed; to allow an internal target, add it to OUTBOUND_ALLOWLIST`,
      );
    }
  }
  return { url, hostname, addresses };
}

async function resolve(hostname: string, resolver: Resolver, signal: AbortSignal): Promise<ResolvedAddress[]> {
  let answers: Awaited<ReturnType<Resolver>>;
  try {
    answers = await untilAborted(resolver(hostname), signal);
  } catch (error) {
    if (error instanceof OutboundError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new OutboundError('DNS_FAILED', `Could not resolve ${hostname}${code ? ` (${code})` : ''}`);
  }
  if (answers.length === 0) throw new OutboundError('DNS_FAILED', `${hostname} resolved to no address`);
  return answers.map(({ address }) => {
    const family = ipFamily(address);
    if (family === null) throw new OutboundError('DNS_FAILED', `${hostname} resolved to something that is not an IP address`);
    return { address, family };
  });
}

function ipFamily(address: string): 4 | 6 | null {
  const family = isIP(address);
  return family === 4 || family === 6 ? family : null;
}
