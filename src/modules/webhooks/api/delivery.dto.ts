import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601 } from 'class-validator';
import { FailureResponse } from '../../../shared/http/failure.response';
import { Optional } from '../../../shared/http/optional.decorator';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { DeliveryDetail, TestDelivery } from '../application/deliveries.service';
import { DeliveryAttempt, MessageStatus, MessageSummary } from '../domain/message';

/** A message's status as the API shows it: queued and running are `pending`. */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'skipped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const API_STATUS: Record<MessageStatus, DeliveryStatus> = {
  queued: 'pending',
  running: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  skipped: 'skipped',
};

export class DeliveryListQuery extends PageQuery {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @Optional()
  @IsIn(DELIVERY_STATUSES)
  status?: DeliveryStatus;

  @ApiPropertyOptional({ example: '2026-01-01T00:00:00Z', description: 'Only messages created at or after this time' })
  @Optional()
  @IsISO8601({ strict: true })
  since?: string;
}

export class RecoverRequest {
  @ApiProperty({
    example: '2026-01-01T00:00:00Z',
    description: 'Failed and skipped messages created at or after this time are sent again; within the last 30 days',
  })
  @IsISO8601({ strict: true })
  since!: string;
}

/** A message of the delivery log, without its payload. */
export class DeliveryResponse {
  @ApiProperty({ format: 'uuid', description: 'The `webhook-id` of every attempt' }) id!: string;
  @ApiProperty({ example: 'agent.execution.failed' }) type!: string;
  @ApiProperty({ enum: DELIVERY_STATUSES }) status!: DeliveryStatus;
  @ApiProperty({ description: 'Attempts made so far, redeliveries included' }) attempts!: number;
  @ApiProperty() createdAt!: string;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'When a pending message is tried again' }) nextAttemptAt!: string | null;
  @ApiProperty({ type: FailureResponse, nullable: true, description: 'The last failure' }) error!: FailureResponse | null;

  static of(message: MessageSummary): DeliveryResponse {
    return {
      id: message.id,
      type: message.type,
      status: API_STATUS[message.status],
      attempts: message.attempts,
      createdAt: message.createdAt.toISOString(),
      finishedAt: message.finishedAt?.toISOString() ?? null,
      nextAttemptAt: message.nextAttemptAt?.toISOString() ?? null,
      error: message.error,
    };
  }
}

export class DeliveryAttemptResponse {
  @ApiProperty() attemptedAt!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'null when no answer came (see error)' }) statusCode!: number | null;
  @ApiProperty() latencyMs!: number;
  @ApiProperty({ type: String, nullable: true, description: 'The first 4 KiB of the answer' }) responseBody!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why no answer came (timeout, refused address, ...)' }) error!: string | null;

  static of(attempt: DeliveryAttempt): DeliveryAttemptResponse {
    return {
      attemptedAt: attempt.attemptedAt.toISOString(),
      statusCode: attempt.statusCode,
      latencyMs: attempt.latencyMs,
      responseBody: attempt.responseBody,
      error: attempt.error,
    };
  }
}

export class DeliveryDetailResponse extends DeliveryResponse {
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The body as sent: `{ type, timestamp, data }`' })
  payload!: Record<string, unknown>;
  @ApiProperty({ type: [DeliveryAttemptResponse], description: 'Oldest first' }) attemptLog!: DeliveryAttemptResponse[];

  static from(detail: DeliveryDetail): DeliveryDetailResponse {
    return {
      ...DeliveryResponse.of(detail.message),
      payload: JSON.parse(detail.message.payload) as Record<string, unknown>,
      attemptLog: detail.attempts.map(DeliveryAttemptResponse.of),
    };
  }
}

export class DeliveryPageResponse {
  @ApiProperty({ type: [DeliveryResponse] }) data!: DeliveryResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class RecoverResponse {
  @ApiProperty() since!: string;
}

export class TestDeliveryResponse {
  @ApiProperty({ format: 'uuid', description: 'The test message, in the delivery log like any other' }) messageId!: string;
  @ApiProperty({ type: DeliveryAttemptResponse, nullable: true, description: 'null when no attempt was made within 15 s (202)' })
  attempt!: DeliveryAttemptResponse | null;

  static of(test: TestDelivery): TestDeliveryResponse {
    return { messageId: test.messageId, attempt: test.attempt ? DeliveryAttemptResponse.of(test.attempt) : null };
  }
}
