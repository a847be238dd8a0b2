import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OperationsController } from './operations.controller';
import { ShutdownDrain } from './shutdown-drain';

/** Health, readiness (and the drain that turns it off at shutdown) and Prometheus metrics, outside /api. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [OperationsController],
  providers: [ShutdownDrain],
})
export class OperationsModule {}
