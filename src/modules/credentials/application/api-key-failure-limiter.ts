import { Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { clientKey, countOrRefuse } from '../../throttling/rate-limits';

const MESSAGE = 'Too many failed API-key authentications from this address; try again later';
/** Addresses this process remembers as over the limit; past it the memory starts again (each is counted in the storage anyway). */
const MAX_BLOCKED = 10_000;

/**
 * Failed API-key authentications per client address, counted like login attempts: in the
 * throttler's storage (so Redis-backed when the service runs several instances), at most
 * LOGIN_LIMIT_PER_IP in a LOGIN_LIMIT_WINDOW_SECONDS window. A well-formed key nobody issued
 * costs a database read; past the limit the address gets 429 RATE_LIMIT_EXCEEDED with
 * Retry-After instead, and no read, until the window ends. Only failures count, so a client
 * using valid keys is never held back by its own requests. Off with RATE_LIMIT_ENABLED=false.
 */
@Injectable()
export class ApiKeyFailureLimiter {
  /** Client keys this process saw go over the limit, and until when (ms): refused without a count or a read. */
  private readonly blocked = new Map<string, number>();

  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly config: AppConfig,
  ) {}

  /** 429 while `ip` is over its limit, as far as this process has seen; called before a key is read. */
  assertAllowed(ip: string): void {
    if (!this.config.rateLimitEnabled) return;
    const client = clientKey(ip);
    const until = this.blocked.get(client);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left > 0) throw tooMany(Math.ceil(left / 1000));
    this.blocked.delete(client);
  }

  /** Counts one failed authentication from `ip`; over the limit, throws the 429 to answer instead of the 401. */
  async failed(ip: string): Promise<void> {
    if (!this.config.rateLimitEnabled) return;
    const client = clientKey(ip);
    const { perIp, windowSeconds } = this.config.loginLimits;
    try {
      await countOrRefuse(this.storage, 'api-key', `api-key:ip:${client}`, perIp, windowSeconds, MESSAGE);
    } catch (error) {
      if (error instanceof DomainError && error.code === 'RATE_LIMIT_EXCEEDED') {
        const retryAfter = Number(error.headers?.['Retry-After']) || windowSeconds;
        if (this.blocked.size >= MAX_BLOCKED) this.blocked.clear();
        this.blocked.set(client, Date.now() + retryAfter * 1000);
      }
      throw error;
    }
  }
}

function tooMany(retryAfter: number): DomainError {
  return new DomainError('RATE_LIMIT_EXCEEDED', MESSAGE, undefined, { 'Retry-After': String(Math.max(1, retryAfter)) });
}
