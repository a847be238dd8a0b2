import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator';
import { CreatedEndpoint, DEFAULT_GRACE_SECONDS, RotatedSecret } from '../application/webhooks.service';
import { ENDPOINT_LIMITS, WebhookEndpoint } from '../domain/endpoint';
import { EventType } from '../domain/event-types';

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

  @ApiPropertyOptional({ type: String, maxLength: ENDPOINT_LIMITS.descriptionLength, nullable: true })
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

  @ApiPropertyOptional({ type: String, maxLength: ENDPOINT_LIMITS.descriptionLength, nullable: true, description: 'null removes it' })
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
