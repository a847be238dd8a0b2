import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OperationsController } from './operations.controller';

/** Health, readiness and Prometheus metrics, outside /api. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [OperationsController],
})
export class OperationsModule {}
