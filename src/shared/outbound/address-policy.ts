import { BlockList, isIP } from 'node:net';
import { embeddedIpv4 } from './embedded-ipv4';
import type { AllowList } from './outbound-http.types';

/** IPv4 ranges an outbound request may never reach unless the allow-list says so. */
const FORBIDDEN_V4: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including 255.255.255.255 broadcast
];

/** IPv6 ranges; addresses that embed an IPv4 address are judged by that address too. */
const FORBIDDEN_V6: ReadonlyArray<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 32], // Teredo: a tunnel to the IPv4 address it carries (obfuscated), whichever that is
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
];

const forbiddenV4 = blockListOf(FORBIDDEN_V4, 'ipv4');
const forbiddenV6 = blockListOf(FORBIDDEN_V6, 'ipv6');

/** What a trial lets through: loopback and private networks (a laptop's, a compose network's). */
const loopbackAndPrivateV4 = blockListOf(
  [
    ['127.0.0.0', 8],
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
  ],
  'ipv4',
);
const loopbackAndPrivateV6 = blockListOf(
  [
    ['::1', 128],
    ['fc00::', 7],
  ],
  'ipv6',
);

/**
 * Parses OUTBOUND_ALLOWLIST: comma-separated host names (exact, case-insensitive), IP
 * addresses and CIDR ranges. Throws on the first entry that is none of these.
 */
export function parseAllowList(spec: string): AllowList {
  const hostnames = new Set<string>();
  const addresses = new BlockList();
  for (const entry of spec.split(',').map((part) => part.trim())) {
    if (entry === '') continue;
    if (!addAddressEntry(addresses, entry)) hostnames.add(parseHostnameEntry(entry));
  }
  return { hostnames, addresses };
}

/**
 * True for addresses inside the service's own network or otherwise not meant to be called:
 * loopback, private, link-local, CGNAT, multicast, reserved. Anything that is not a valid IP
 * address counts as forbidden.
 */
export function isForbiddenAddress(ip: string): boolean {
  const bare = ip.split('%')[0];
  switch (isIP(bare)) {
    case 4:
      return forbiddenV4.check(bare, 'ipv4');
    case 6: {
      const v4 = embeddedIpv4(bare);
      return forbiddenV6.check(bare, 'ipv6') || (v4 !== null && forbiddenV4.check(v4, 'ipv4'));
    }
    default:
      return true;
  }
}

/**
 * True when the host name is listed by name, or the address lies in a listed IP or range; or,
 * while the list allows internal targets (a trial), when it is a loopback or private one.
 */
export function allows(allowList: AllowList, target: { hostname: string; address: string }): boolean {
  if (allowList.hostnames.has(normalizeHostname(target.hostname))) return true;
  const family = isIP(target.address);
  if (family !== 0 && allowList.addresses.check(target.address, family === 4 ? 'ipv4' : 'ipv6')) return true;
  return allowList.internalAllowed?.() === true && isLoopbackOrPrivate(target);
}

/**
 * Loopback and private addresses (an IPv6 one that embeds such an IPv4 one too). A target that is
 * a name and no address yet (a URL checked without resolving it) counts by name: `localhost`.
 */
export function isLoopbackOrPrivate(target: { hostname: string; address: string }): boolean {
  const bare = target.address.split('%')[0];
  switch (isIP(bare)) {
    case 4:
      return loopbackAndPrivateV4.check(bare, 'ipv4');
    case 6: {
      const v4 = embeddedIpv4(bare);
      return loopbackAndPrivateV6.check(bare, 'ipv6') || (v4 !== null && loopbackAndPrivateV4.check(v4, 'ipv4'));
    }
    default: {
      const name = normalizeHostname(target.hostname);
      return name === 'localhost' || name.endsWith('.localhost');
    }
  }
}

/** Lowercase without a trailing dot, so `API.internal.` and `api.internal` compare equal. */
export function normalizeHostname(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '');
}

function addAddressEntry(list: BlockList, entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 0) {
    if (prefix !== undefined) throw invalidEntry(entry);
    return false;
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (prefix === undefined) {
    list.addAddress(address, type);
    return true;
  }
  const bits = Number(prefix);
  if (rest.length > 0 || !/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) throw invalidEntry(entry);
  list.addSubnet(address, bits, type);
  return true;
}

/** A DNS name as the WHATWG URL parser would leave it; never something it reads as an IP. */
function parseHostnameEntry(entry: string): string {
  const name = normalizeHostname(entry);
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(name)) throw invalidEntry(entry);
  let parsed: string;
  try {
    parsed = new URL(`http://${name}/`).hostname;
  } catch {
    throw invalidEntry(entry);
  }
  if (parsed !== name) throw invalidEntry(entry);
  return name;
}

function invalidEntry(entry: string): Error {
  return new Error(`OUTBOUND_ALLOWLIST: "${entry}" is not a host name, an IP address or a CIDR range`);
}

function blockListOf(ranges: ReadonlyArray<[string, number]>, type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, type);
  return list;
}
