import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ANY_JSON } from '../../../shared/http/json-value.schema';
import { Optional } from '../../../shared/http/optional.decorator';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { DEFAULT_APPROVERS, StepWait, WaitAnswer } from '../domain/wait';
import { EVENT_KEY_MAX, EVENT_NAME } from '../application/steps/wait.step';

/** The body of `POST .../steps/:stepId/complete`. */
export class CompleteStepBody {
  @ApiPropertyOptional({ ...ANY_JSON, description: "The answer; checked against the wait's schema", example: { approved: true } })
  @IsOptional()
  data?: unknown;
}

/** The body of `POST /api/events`. */
export class WorkflowEventBody {
  @ApiProperty({ pattern: EVENT_NAME, example: 'payment.settled', description: 'The event name the waits name' })
  @IsString()
  @Matches(new RegExp(EVENT_NAME), { message: '$property must be letters, digits and . _ : / -, at most 200' })
  name!: string;

  @ApiPropertyOptional({
    maxLength: EVENT_KEY_MAX,
    example: 'order-42',
    description: "The correlation key the waits' `key` gave (none: the empty key)",
  })
  @Optional()
  @IsString()
  @MaxLength(EVENT_KEY_MAX)
  key?: string;

  @ApiPropertyOptional({ ...ANY_JSON, description: "What the waits' steps take as `data`", example: { amount: 42 } })
  @IsOptional()
  data?: unknown;
}

export class ApprovalsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['pending'], default: 'pending', description: 'Only the approvals still waiting (the one list kept)' })
  @Optional()
  @IsIn(['pending'])
  status = 'pending' as const;
}

export class AnsweredByResponse {
  @ApiProperty({ enum: ['user', 'api_key', 'event'] }) type!: string;
  @ApiPropertyOptional({ description: 'The user or API key' }) id?: string;
  @ApiPropertyOptional() email?: string;
  @ApiPropertyOptional({ description: "The event's name" }) name?: string;
}

/** A wait step's output. */
export class WaitAnswerResponse {
  @ApiProperty({ ...ANY_JSON, nullable: true }) data!: unknown;
  @ApiProperty({ type: AnsweredByResponse, nullable: true }) by!: AnsweredByResponse | null;
  @ApiProperty({ format: 'date-time' }) at!: string;
}

export class CompletedStepResponse {
  @ApiProperty({ format: 'uuid' }) runId!: string;
  @ApiProperty() stepId!: string;
  @ApiProperty({ type: WaitAnswerResponse, description: "The step's output, taken by the run as it goes on" }) output!: WaitAnswerResponse;

  static of(runId: string, stepId: string, answer: WaitAnswer): CompletedStepResponse {
    return { runId, stepId, output: answer as WaitAnswerResponse };
  }
}

export class EventAcceptedResponse {
  @ApiProperty() name!: string;
  @ApiProperty() key!: string;
  @ApiProperty({ description: 'The waits it answered' }) answered!: number;
  @ApiProperty({ description: 'Whether it was kept for a wait that begins soon (no wait took it)' }) kept!: boolean;
}

export class ApproversResponse {
  @ApiPropertyOptional({ type: [String], enum: ['admin', 'member'] }) roles?: string[];
  @ApiPropertyOptional({ type: [String], description: 'User ids or emails' }) users?: string[];
}

/** An approval waiting for an answer. */
export class ApprovalResponse {
  @ApiProperty({ format: 'uuid' }) workflowId!: string;
  @ApiProperty({ format: 'uuid' }) runId!: string;
  @ApiProperty() stepId!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'The JSON Schema of the answer' })
  schema!: Record<string, unknown> | null;
  @ApiProperty({ type: ApproversResponse }) approvers!: ApproversResponse;
  @ApiProperty({ description: 'Whether whoever started the run may answer' }) selfApproval!: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) timeoutAt!: string | null;
  @ApiProperty({ description: 'Where to answer it (POST)' }) completeUrl!: string;

  static of(wait: StepWait): ApprovalResponse {
    return {
      workflowId: wait.workflowId,
      runId: wait.runId,
      stepId: wait.stepId,
      schema: wait.schema,
      approvers: wait.approvers ?? DEFAULT_APPROVERS,
      selfApproval: wait.selfApproval,
      createdAt: wait.createdAt.toISOString(),
      timeoutAt: wait.timeoutAt?.toISOString() ?? null,
      completeUrl: `/api/workflows/${wait.workflowId}/runs/${wait.runId}/steps/${wait.stepId}/complete`,
    };
  }
}

export class ApprovalPageResponse {
  @ApiProperty({ type: [ApprovalResponse] }) data!: ApprovalResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
