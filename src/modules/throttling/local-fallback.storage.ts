import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { Counter } from 'prom-client';

/** At most one log line per this many ms while the store is failing. */
const LOG_EVERY_MS = 10_000;

/**
 * Counters in a shared store (Redis) that neither take the service down with them nor stop
 * counting: when the store fails or is slow (the client's command timeout), that count is made
 * in this process's memory instead, so every limit (login attempts, failed API keys, tier
 * budgets, hooks) still holds, per process, as it does without Redis. Each such count adds to
 * `rate_limit_storage_errors_total` on /metrics and is logged at most every 10 s. The store is
 * tried again with every count; when it answers, counting goes back to it (what was counted in
 * memory meanwhile stays there, and is not added to it).
 */
export class LocalFallbackStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimits');
  private readonly local = new ThrottlerStorageService();
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
        this.logger.warn(`Rate-limit store unavailable, counting in this process's memory: ${(error as Error).message}`);
      }
      return this.local.increment(key, ttl, limit, blockDuration, throttlerName);
    }
  }

  onApplicationShutdown(): void {
    this.local.onApplicationShutdown();
  }
}
