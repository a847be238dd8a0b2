import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';

/**
 * Counts login attempts per client address and per address and email in a fixed window (in
 * the throttler's storage, so Redis-backed when the service runs several instances). Nothing
 * is counted per email alone: guessing one account's password from one address is slowed,
 * but no one can lock its owner out from another address.
 */
/** How many times the login limit per address the public SSO routes allow. */
export const SSO_ROUTE_FACTOR = 10;

@Injectable()
export class LoginLimiter {
  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly config: AppConfig,
  ) {}

  async attempt(ip: string, email: string): Promise<void> {
    const { perIp, perEmail } = this.config.loginLimits;
    const client = clientKey(ip);
    await this.count(`login:ip:${client}`, perIp, 'Too many login attempts; try again later');
    await this.count(`login:ip-email:${client}:${email.trim().toLowerCase()}`, perEmail, 'Too many login attempts; try again later');
  }

  /**
   * The public single sign-on routes (start a login, the ACS, the code exchange), which write
   * to the database for anyone: SSO_ROUTE_FACTOR times the login limit per client address, as
   * a company's whole staff may sign in from one address at the start of the day.
   */
  async ssoAttempt(ip: string): Promise<void> {
    await this.count(
      `sso:ip:${clientKey(ip)}`,
      this.config.loginLimits.perIp * SSO_ROUTE_FACTOR,
      'Too many sign-in requests; try again later',
    );
  }

  private async count(key: string, limit: number, message: string): Promise<void> {
    const { windowSeconds } = this.config.loginLimits;
    const ttl = windowSeconds * 1000;
    const record = await this.storage.increment(key, ttl, limit, ttl, 'login');
    if (record.totalHits > limit) {
      const retryAfter = Math.max(1, Math.ceil((record.isBlocked ? record.timeToBlockExpire : record.timeToExpire) || windowSeconds));
      throw new DomainError('RATE_LIMIT_EXCEEDED', message, undefined, { 'Retry-After': String(retryAfter) });
    }
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
