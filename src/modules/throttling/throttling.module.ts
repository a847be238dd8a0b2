import { Global, Module } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';

/**
 * The counters behind every limit (login attempts now, tier limits later). In memory; the
 * Redis-backed storage replaces it when REDIS_URL is set so instances count together.
 */
@Global()
@Module({
  providers: [{ provide: ThrottlerStorage, useClass: ThrottlerStorageService }],
  exports: [ThrottlerStorage],
})
export class ThrottlingModule {}
