import { ApiProperty } from '@nestjs/swagger';
import { FailureResponse } from '../../shared/http/failure.response';
import { ANY_JSON } from '../../shared/http/json-value.schema';
import { TriggeredByResponse } from '../../shared/auth/triggered-by.response';
import { durationMs, Execution, EXECUTION_STATUSES, ExecutionStatus } from './domain/execution';

/** An execution as the API shows it (GET, and the data of agent.execution.* events). */
export class ExecutionResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) agentId!: string;
  @ApiProperty({ enum: EXECUTION_STATUSES }) status!: ExecutionStatus;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) input!: unknown;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON; set when succeeded' }) output!: unknown;
  @ApiProperty({ type: FailureResponse, nullable: true }) error!: FailureResponse | null;
  @ApiProperty({ description: 'Attempts started so far' }) attempts!: number;
  @ApiProperty() createdAt!: string;
  @ApiProperty({ type: String, nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: Number, nullable: true }) durationMs!: number | null;
  @ApiProperty({ type: TriggeredByResponse }) triggeredBy!: TriggeredByResponse;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The execution this one retries' }) retryOf!: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The execution that retries this one (retried once)' })
  retriedBy!: string | null;

  static of(e: Execution): ExecutionResponse {
    return {
      id: e.id,
      agentId: e.agentId,
      status: e.status,
      input: e.input,
      output: e.output,
      error: e.error,
      attempts: e.attempts,
      createdAt: e.createdAt.toISOString(),
      startedAt: e.startedAt?.toISOString() ?? null,
      finishedAt: e.finishedAt?.toISOString() ?? null,
      durationMs: durationMs(e),
      triggeredBy: e.triggeredBy,
      retryOf: e.retryOf,
      retriedBy: e.retriedBy,
    };
  }
}
