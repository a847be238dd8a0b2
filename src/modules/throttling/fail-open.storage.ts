import { Logger } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { Counter } from 'prom-client';

/** At most one log line per this many ms while the store is failing. */
const LOG_EVERY_MS = 10_000;

/**
 * Counters in a shared store (Redis) that must never take the service down with them: when
 * the store fails or is slow (the client's command timeout), the request is let through uncounted, the failure is counted
 * on /metrics (`rate_limit_storage_errors_total`) and logged (at most every 10 s).
 */
export class FailOpenStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimits');
  private lastLog = 0;

  constructor(
    private readonly store: ThrottlerStorage,
    private readonly failures: Counter,
  ) {}

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    try {
      return await this.store.increment(key, ttl, limit, blockDuration, throttlerName);
    } catch (error) {
      this.failures.inc();
      if (Date.now() - this.lastLog > LOG_EVERY_MS) {
        this.lastLog = Date.now();
        this.logger.warn(`Rate-limit store unavailable, requests pass uncounted: ${(error as Error).message}`);
      }
      return { totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
    }
  }
}
