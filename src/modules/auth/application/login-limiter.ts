import { Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import { AppConfig } from '../../../config/app-config';
import { clientKey, countOrRefuse } from '../../throttling/rate-limits';

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

  private count(key: string, limit: number, message: string): Promise<void> {
    return countOrRefuse(this.storage, 'login', key, limit, this.config.loginLimits.windowSeconds, message);
  }
}
