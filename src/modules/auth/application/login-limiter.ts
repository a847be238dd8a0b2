import { Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';

/**
 * Counts login attempts per client IP and per email in a fixed window (in the throttler's
 * storage, so Redis-backed when the service runs several instances).
 */
@Injectable()
export class LoginLimiter {
  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly config: AppConfig,
  ) {}

  async attempt(ip: string, email: string): Promise<void> {
    const { perIp, perEmail, windowSeconds } = this.config.loginLimits;
    const ttl = windowSeconds * 1000;
    for (const [key, limit] of [
      [`login:ip:${ip}`, perIp],
      [`login:email:${email.trim().toLowerCase()}`, perEmail],
    ] as const) {
      const record = await this.storage.increment(key, ttl, limit, ttl, 'login');
      if (record.totalHits > limit) {
        const retryAfter = Math.max(1, Math.ceil((record.isBlocked ? record.timeToBlockExpire : record.timeToExpire) || windowSeconds));
        throw new DomainError('RATE_LIMIT_EXCEEDED', 'Too many login attempts; try again later', undefined, {
          'Retry-After': String(retryAfter),
        });
      }
    }
  }
}
