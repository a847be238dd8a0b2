import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Metrics } from './metrics';
import { OperationsController } from './operations.controller';

/** Health, readiness and Prometheus metrics, outside /api. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [OperationsController],
  providers: [Metrics],
  exports: [Metrics],
})
export class OperationsModule {}
