import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { Redis } from 'ioredis';

type Increment = (hitKey: string, blockKey: string, name: string, ttl: number, limit: number, block: number) => Promise<number[]>;

/**
 * The library's Redis counters, sent as EVALSHA: its Lua script is registered once as a
 * command instead of being sent whole (EVAL) with every request.
 */
export class RedisCounters extends ThrottlerStorageRedisService {
  private readonly incrementScript: Increment;

  constructor(redis: Redis) {
    super(redis);
    redis.defineCommand('throttlerIncrement', { numberOfKeys: 2, lua: this.scriptSrc });
    const commands = redis as unknown as { throttlerIncrement: Increment };
    this.incrementScript = commands.throttlerIncrement.bind(redis);
  }

  override async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    // The same keys as the library's own increment.
    const base = `{${key}:${throttlerName}}`;
    const [totalHits, timeToExpire, isBlocked, timeToBlockExpire] = await this.incrementScript(
      `${base}:hits`,
      `${base}:blocked`,
      throttlerName,
      ttl,
      limit,
      blockDuration,
    );
    return {
      totalHits,
      timeToExpire: Math.ceil(timeToExpire / 1000),
      isBlocked: isBlocked === 1,
      timeToBlockExpire: Math.ceil(timeToBlockExpire / 1000),
    };
  }
}
