import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { OutboundTarget } from './outbound-target';

/** Pools kept at once; the least recently used one is closed past this. */
const MAX_POOLS = 256;
/** Connections one pool opens at most; more requests wait for one of them. */
const SOCKETS_PER_POOL = 64;

/**
 * Kept-alive connections for callers that send many requests to one receiver (webhooks). A
 * pool serves one scheme, host and port *and* the addresses the guard checked for it, so a
 * socket is reused only by a request whose own check gave the same answer: after a DNS
 * rebinding the request gets a pool of its own, which connects to the new, checked addresses.
 */
export class ConnectionPools {
  private readonly pools = new Map<string, HttpAgent>();

  for(target: OutboundTarget): HttpAgent {
    const key = `${target.url.protocol}//${target.hostname}:${target.url.port}@${target.addresses.map((a) => a.address).join(',')}`;
    let pool = this.pools.get(key);
    if (pool) this.pools.delete(key);
    else {
      const Agent = target.url.protocol === 'https:' ? HttpsAgent : HttpAgent;
      pool = new Agent({ keepAlive: true, maxSockets: SOCKETS_PER_POOL, maxFreeSockets: SOCKETS_PER_POOL, scheduling: 'lifo' });
    }
    // Most recently used last: the first key is the one to close.
    this.pools.set(key, pool);
    if (this.pools.size > MAX_POOLS) {
      const [oldest] = this.pools.keys();
      this.pools.get(oldest)?.destroy();
      this.pools.delete(oldest);
    }
    return pool;
  }
}
