import { Global, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { Counter } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { Metrics } from '../../shared/metrics/metrics';
import { OrganizationsModule } from '../organizations/organizations.module';
import { FailOpenStorage } from './fail-open.storage';
import { RateLimits } from './rate-limits';
import { RedisCounters } from './redis-counters';

/** The Redis connection behind the counters, when REDIS_URL is set; closed at shutdown. */
@Injectable()
class RedisConnection implements OnApplicationShutdown {
  readonly client: Redis | null;

  constructor(config: AppConfig) {
    if (!config.redisUrl) {
      this.client = null;
      return;
    }
    const logger = new Logger('Redis');
    let lastLog = 0;
    this.client = new Redis(config.redisUrl, {
      // Fail fast while disconnected (the storage then lets requests through) and reconnect in the background.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      // A counter that takes longer lets the request through uncounted.
      commandTimeout: 250,
      // Counters of concurrent requests go out in one write.
      enableAutoPipelining: true,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    });
    this.client.on('error', (error: Error) => {
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        logger.warn(`Redis: ${error.message}`);
      }
    });
  }

  onApplicationShutdown(): void {
    this.client?.disconnect();
  }
}

/**
 * The counters behind every limit (tier rate limits, login attempts, inbound hooks): in Redis when
 * REDIS_URL is set, so every instance counts together (failing open if Redis is away), in
 * this process's memory otherwise.
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
          help: 'Rate-limit counter updates that failed (Redis unreachable or slow); those requests passed uncounted',
          registers: [metrics.registry],
        });
        if (!redis.client) return new ThrottlerStorageService();
        return new FailOpenStorage(new RedisCounters(redis.client), failures);
      },
    },
  ],
  exports: [ThrottlerStorage, RateLimits],
})
export class ThrottlingModule {}
