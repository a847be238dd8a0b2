import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OperationsController } from './operations.controller';
import { ProcessFailures } from './process-failures';
import { ShutdownDrain } from './shutdown-drain';

/**
 * Health, readiness (and the drain that turns it off at shutdown) and Prometheus metrics, outside
 * /api; and what the process does with a failure nothing caught.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [OperationsController],
  providers: [ShutdownDrain, ProcessFailures],
})
export class OperationsModule {}
