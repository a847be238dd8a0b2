import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import { Counter } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { DomainError } from '../../shared/errors/domain-error';
import { Metrics } from '../../shared/metrics/metrics';
import { SubscriptionService } from '../organizations/application/subscription.service';

/**
 * Fixed-window counters in the throttler's storage (Redis when REDIS_URL is set, so every
 * instance counts together): the organization's tier budget every request draws on, and the
 * named limits of public routes (login attempts, inbound hooks).
 */
@Injectable()
export class RateLimits {
  /** Labelled by organization id: bounded by the organizations of one installation. */
  private readonly refusals: Counter<'organization'>;

  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly subscriptions: SubscriptionService,
    private readonly config: AppConfig,
    metrics: Metrics,
  ) {
    this.refusals = new Counter({
      name: 'rate_limit_refusals_total',
      help: "Requests refused with 429 because the organization's tier rate limit was reached, by organization id",
      labelNames: ['organization'],
      registers: [metrics.registry],
    });
  }

  /** One request against `key` (see `countOrRefuse`). */
  count(name: string, key: string, limit: number, windowSeconds: number, message: string): Promise<void> {
    return countOrRefuse(this.storage, name, key, limit, windowSeconds, message);
  }

  /**
   * Counts one request against its organization's budget for the window (every user, key and
   * hook of an organization share it), at the limit of the organization's current tier.
   * Answers the IETF draft `RateLimit-Policy` / `RateLimit` headers and the older
   * `X-RateLimit-*` ones; over the limit, `refused` is the 429 to answer (with `Retry-After`).
   */
  async organization(organizationId: string): Promise<{ headers: Record<string, string>; refused: DomainError | null }> {
    if (!this.config.rateLimitEnabled) return { headers: {}, refused: null };
    const { tier, limit, windowSeconds } = await this.subscriptions.rateLimit(organizationId);
    const ttl = windowSeconds * 1000;
    const record = await this.storage.increment(`org:${organizationId}`, ttl, limit, ttl, 'tier');
    const reset = Math.max(1, record.isBlocked ? record.timeToBlockExpire : record.timeToExpire);
    const remaining = Math.max(0, limit - record.totalHits);
    const headers = {
      'RateLimit-Policy': `"${tier}";q=${limit};w=${windowSeconds}`,
      RateLimit: `"${tier}";r=${remaining};t=${reset}`,
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(reset),
    };
    if (record.totalHits <= limit) return { headers, refused: null };
    this.refusals.inc({ organization: organizationId });
    const message = `The ${tier} tier allows ${limit} requests per ${windowSeconds} s for the organization; retry in ${reset} s`;
    return { headers, refused: new DomainError('RATE_LIMIT_EXCEEDED', message, undefined, { 'Retry-After': String(reset) }) };
  }
}

/**
 * Counts one request against `key` in a fixed window; over `limit`: 429 with `Retry-After` and
 * `message`. `name` tells the storage's blocks apart (login, hook).
 */
export async function countOrRefuse(
  storage: ThrottlerStorage,
  name: string,
  key: string,
  limit: number,
  windowSeconds: number,
  message: string,
): Promise<void> {
  const ttl = windowSeconds * 1000;
  const record = await storage.increment(key, ttl, limit, ttl, name);
  if (record.totalHits > limit) {
    const retryAfter = Math.max(1, Math.ceil((record.isBlocked ? record.timeToBlockExpire : record.timeToExpire) || windowSeconds));
    throw new DomainError('RATE_LIMIT_EXCEEDED', message, undefined, { 'Retry-After': String(retryAfter) });
  }
}

/**
 * What a client is counted by: its IPv4 address (an IPv4-mapped IPv6 one included), or the /64
 * of an IPv6 address, since one host commonly holds a whole /64.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
