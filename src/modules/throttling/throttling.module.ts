import { once } from 'node:events';
import { Global, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { Counter } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { Metrics } from '../../shared/metrics/metrics';
import { OrganizationsModule } from '../organizations/organizations.module';
import { LocalFallbackStorage } from './local-fallback.storage';
import { RateLimits } from './rate-limits';
import { RedisCounters } from './redis-counters';

/** How long a starting process waits for Redis before it serves (counting in memory meanwhile). */
const CONNECT_TIMEOUT_MS = 2000;

/**
 * The Redis connection behind the counters, when REDIS_URL is set: ready before the process
 * serves its first request (or CONNECT_TIMEOUT_MS passed), closed at shutdown.
 */
@Injectable()
class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;

  constructor(config: AppConfig) {
    if (!config.redis) {
      this.client = null;
      return;
    }
    let lastLog = 0;
    this.client = new Redis(config.redis.url, {
      // Fail fast while disconnected (the storage then counts in memory) and reconnect in the background.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // A counter that takes longer is counted in this process's memory instead. Generous by
      // default: a pause of this process's event loop (a long GC) makes its replies late as well.
      commandTimeout: config.redis.commandTimeoutMs,
      // Counters of concurrent requests go out in one write.
      enableAutoPipelining: true,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    this.client.on('error', (error: Error) => {
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        this.logger.warn(`Redis: ${error.message}`);
      }
    });
  }

  /** A process that joins its peers counts with them from its first request, not in its own memory. */
  async onModuleInit(): Promise<void> {
    if (!this.client || this.client.status === 'ready') return;
    try {
      await once(this.client, 'ready', { signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS) });
    } catch (error) {
      // A timeout, or the connection's first error (Redis down): serve anyway, and reconnect in the background.
      this.logger.warn(`Redis not ready at start (${(error as Error).message}); counting in this process's memory until it is`);
    }
  }

  onApplicationShutdown(): void {
    this.client?.disconnect();
  }
}

/**
 * The counters behind every limit (tier rate limits, login attempts, failed API keys, inbound hooks): in Redis when
 * REDIS_URL is set, so every instance counts together (each in its own memory while Redis is
 * away), in this process's memory otherwise.
 */
@Global()
@Module({
  imports: [OrganizationsModule],
  providers: [
    RedisConnection,
    RateLimits,
    {
      provide: ThrottlerStorage,
      inject: [RedisConnection, Metrics],
      useFactory: (redis: RedisConnection, metrics: Metrics) => {
        // Registered without Redis too (it stays 0), so dashboards find the series either way.
        const failures = new Counter({
          name: 'rate_limit_storage_errors_total',
          help: "Rate-limit counter updates that failed (Redis unreachable or slow); those were counted in the process's memory instead",
          registers: [metrics.registry],
        });
        if (!redis.client) return new ThrottlerStorageService();
        return new LocalFallbackStorage(new RedisCounters(redis.client), failures);
      },
    },
  ],
  exports: [ThrottlerStorage, RateLimits],
})
export class ThrottlingModule {}
