import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';

/** The app's one Prometheus registry, for every module that counts something. */
@Global()
@Module({ providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}
