import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { FailureResponse } from '../../../shared/http/failure.response';
import { Optional } from '../../../shared/http/optional.decorator';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { DeliveryDetail, TestDelivery } from '../application/deliveries.service';
import { CreatedEndpoint, DEFAULT_GRACE_SECONDS, RotatedSecret } from '../application/webhooks.service';
import { ENDPOINT_LIMITS, WebhookEndpoint } from '../domain/endpoint';
import { EventType } from '../domain/event-types';
import { DeliveryAttempt, MessageStatus, WebhookMessage } from '../domain/message';

const HTTP_URL = /^https?:\/\//i;
const URL_MESSAGE = 'url must be an http or https URL';
const URL_DESCRIPTION = 'Where deliveries are POSTed; checked by the SSRF guard when saved and on every delivery';
const EVENT_TYPES_DESCRIPTION = 'Event types (see GET /api/webhook-event-types) or prefix wildcards such as `workflow.run.*`';
const EVENT_TYPE_LENGTH = 100;

export class CreateWebhookRequest {
  @ApiProperty({ maxLength: ENDPOINT_LIMITS.urlLength, example: 'https://hooks.example.com/platform', description: URL_DESCRIPTION })
  @IsString()
  @MaxLength(ENDPOINT_LIMITS.urlLength)
  @Matches(HTTP_URL, { message: URL_MESSAGE })
  url!: string;

  @ApiPropertyOptional({ maxLength: ENDPOINT_LIMITS.descriptionLength, nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(ENDPOINT_LIMITS.descriptionLength)
  description?: string | null;

  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: ENDPOINT_LIMITS.eventTypes,
    example: ['agent.execution.failed', 'workflow.run.*'],
    description: EVENT_TYPES_DESCRIPTION,
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(ENDPOINT_LIMITS.eventTypes)
  @IsString({ each: true })
  @MaxLength(EVENT_TYPE_LENGTH, { each: true })
  eventTypes!: string[];

  @ApiPropertyOptional({ default: true })
  @Optional()
  @IsBoolean()
  enabled?: boolean;
}

export class UpdateWebhookRequest {
  @ApiPropertyOptional({ maxLength: ENDPOINT_LIMITS.urlLength, description: URL_DESCRIPTION })
  @Optional()
  @IsString()
  @MaxLength(ENDPOINT_LIMITS.urlLength)
  @Matches(HTTP_URL, { message: URL_MESSAGE })
  url?: string;

  @ApiPropertyOptional({ maxLength: ENDPOINT_LIMITS.descriptionLength, nullable: true, description: 'null removes it' })
  @IsOptional()
  @IsString()
  @MaxLength(ENDPOINT_LIMITS.descriptionLength)
  description?: string | null;

  @ApiPropertyOptional({ type: [String], minItems: 1, maxItems: ENDPOINT_LIMITS.eventTypes, description: 'Replaces the whole list' })
  @Optional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(ENDPOINT_LIMITS.eventTypes)
  @IsString({ each: true })
  @MaxLength(EVENT_TYPE_LENGTH, { each: true })
  eventTypes?: string[];

  @ApiPropertyOptional({ description: 'Enabling an endpoint the service disabled clears its disabledReason' })
  @Optional()
  @IsBoolean()
  enabled?: boolean;
}

export class RotateSecretRequest {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: ENDPOINT_LIMITS.graceSeconds.max,
    default: DEFAULT_GRACE_SECONDS,
    description: 'How long the previous secret keeps signing deliveries (beside the new one); 0 stops it at once',
  })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(ENDPOINT_LIMITS.graceSeconds.max)
  graceSeconds?: number;
}

/** An endpoint as every answer shows it: never a secret. */
export class WebhookResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() url!: string;
  @ApiProperty({ type: String, nullable: true }) description!: string | null;
  @ApiProperty({ type: [String] }) eventTypes!: string[];
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Why the service disabled it (410, failing for days)' })
  disabledReason!: string | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;

  static of(endpoint: WebhookEndpoint): WebhookResponse {
    return {
      id: endpoint.id,
      url: endpoint.url,
      description: endpoint.description,
      eventTypes: [...endpoint.eventTypes],
      enabled: endpoint.enabled,
      disabledReason: endpoint.disabledReason,
      createdAt: endpoint.createdAt.toISOString(),
      updatedAt: endpoint.updatedAt.toISOString(),
    };
  }
}

export class CreatedWebhookResponse extends WebhookResponse {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'The signing secret; shown this once' })
  secret!: string;

  static from(created: CreatedEndpoint): CreatedWebhookResponse {
    return { ...WebhookResponse.of(created.endpoint), secret: created.secret };
  }
}

export class WebhookPageResponse {
  @ApiProperty({ type: [WebhookResponse] }) data!: WebhookResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class RotatedSecretResponse {
  @ApiProperty({ description: 'The new signing secret; shown this once' }) secret!: string;
  @ApiProperty({ description: 'When the previous secret stops signing' }) previousSecretExpiresAt!: string;

  static of(rotated: RotatedSecret): RotatedSecretResponse {
    return { secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt.toISOString() };
  }
}

export class EventTypeResponse {
  @ApiProperty({ example: 'agent.execution.failed' }) type!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The JSON Schema of the event `data`' })
  schema!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'An example `data`' }) example!: Record<string, unknown>;

  static of(eventType: EventType): EventTypeResponse {
    return { type: eventType.type, description: eventType.description, schema: eventType.schema, example: eventType.example };
  }
}

export class EventTypeListResponse {
  @ApiProperty({ type: [EventTypeResponse] }) data!: EventTypeResponse[];
}

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

  static of(message: WebhookMessage): DeliveryResponse {
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
