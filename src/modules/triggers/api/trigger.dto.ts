import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { ANY_JSON } from '../../../shared/http/json-value.schema';
import { Optional, OptionalOrNull } from '../../../shared/http/optional.decorator';
import { FailureResponse } from '../../../shared/http/failure.response';
import { HookAnswer } from '../application/hooks';
import {
  DEDUPE_SOURCES,
  DedupeSource,
  RESPONSE_MODES,
  ResponseMode,
  SIGNATURE_ENCODINGS,
  SignatureEncoding,
  Trigger,
  TRIGGER_LIMITS,
  TRIGGER_SCHEMES,
  TriggerScheme,
} from '../domain/trigger';
import { TriggerEvent, TriggerEventSummary } from '../domain/trigger.repository';
import { RUN_STATUSES, RunStatus } from '../../runs/domain/run';

const NAME = { maxLength: TRIGGER_LIMITS.nameLength, example: 'GitHub pushes', nullable: true, type: String };
const SIGNATURE_HEADER = {
  maxLength: TRIGGER_LIMITS.headerNameLength,
  example: 'X-Hub-Signature-256',
  description: 'hmac-sha256: the header with the signature (default X-Hub-Signature-256)',
};
const SIGNATURE_ENCODING = { enum: SIGNATURE_ENCODINGS, description: 'hmac-sha256: how the HMAC is written (default hex)' };
const SIGNATURE_PREFIX = {
  maxLength: TRIGGER_LIMITS.prefixLength,
  example: 'sha256=',
  description: 'hmac-sha256: text before the HMAC (default sha256=)',
};
const MAPPING = {
  maxLength: TRIGGER_LIMITS.mappingLength,
  nullable: true,
  type: String,
  example: "{ 'ref': body.ref, 'event': headers.`x-github-event` }",
  description: 'JSONata from { headers, body, query } to the run input; null: the body is the input',
};
const DEDUPE = {
  enum: DEDUPE_SOURCES,
  description:
    'What makes a repeated delivery the same: the webhook-id header (default for standard-webhooks); the signature header, an ' +
    'HMAC of the exact body (hmac-sha256 only, its default: a captured delivery sent again is the same run, whatever ' +
    'Idempotency-Key it carries, and so is the same body sent twice on purpose); Idempotency-Key (default for bearer); ' +
    'a header of your choice; or none',
};
const DEDUPE_HEADER = {
  maxLength: TRIGGER_LIMITS.headerNameLength,
  example: 'X-GitHub-Delivery',
  nullable: true,
  type: String,
  description: 'The header when dedupe is "header"',
};
const RESPONSE_MODE = {
  enum: RESPONSE_MODES,
  description: "async (default): 202 with the run id; sync: waits up to waitSeconds and answers the run's output",
};
const WAIT_SECONDS = {
  minimum: TRIGGER_LIMITS.waitSeconds.min,
  maximum: TRIGGER_LIMITS.waitSeconds.max,
  default: TRIGGER_LIMITS.waitSeconds.default,
};
const VERSION = {
  type: Number,
  nullable: true,
  minimum: 1,
  description: 'A version every run uses; null: the current one when the request comes',
};

/** The settings PATCH may change (everything but the scheme and the secret). */
export class UpdateTriggerRequest {
  @ApiPropertyOptional(NAME)
  @OptionalOrNull()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.nameLength)
  name?: string | null;

  @ApiPropertyOptional(SIGNATURE_HEADER)
  @Optional()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.headerNameLength)
  signatureHeader?: string;

  @ApiPropertyOptional(SIGNATURE_ENCODING)
  @Optional()
  @IsIn(SIGNATURE_ENCODINGS)
  signatureEncoding?: SignatureEncoding;

  @ApiPropertyOptional(SIGNATURE_PREFIX)
  @Optional()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.prefixLength)
  signaturePrefix?: string;

  @ApiPropertyOptional(MAPPING)
  @OptionalOrNull()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.mappingLength)
  mapping?: string | null;

  @ApiPropertyOptional(DEDUPE)
  @Optional()
  @IsIn(DEDUPE_SOURCES)
  dedupe?: DedupeSource;

  @ApiPropertyOptional(DEDUPE_HEADER)
  @OptionalOrNull()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.headerNameLength)
  dedupeHeader?: string | null;

  @ApiPropertyOptional(RESPONSE_MODE)
  @Optional()
  @IsIn(RESPONSE_MODES)
  responseMode?: ResponseMode;

  @ApiPropertyOptional(WAIT_SECONDS)
  @Optional()
  @IsInt()
  @Min(TRIGGER_LIMITS.waitSeconds.min)
  @Max(TRIGGER_LIMITS.waitSeconds.max)
  waitSeconds?: number;

  @ApiPropertyOptional(VERSION)
  @OptionalOrNull()
  @IsInt()
  @Min(1)
  workflowVersion?: number | null;

  @ApiPropertyOptional({ default: true })
  @Optional()
  @IsBoolean()
  enabled?: boolean;
}

export class CreateTriggerRequest extends UpdateTriggerRequest {
  @ApiProperty({ enum: TRIGGER_SCHEMES, description: 'How a request proves it comes from the sender' })
  @IsIn(TRIGGER_SCHEMES)
  scheme!: TriggerScheme;

  @ApiPropertyOptional({
    description:
      'The sender’s own secret (standard-webhooks: whsec_… of at least 24 bytes with at least 16 different byte values; ' +
      'hmac-sha256: 16 to 256 printable characters, not one repeated, at least 8 different ones (a quarter of the length ' +
      'when shorter than 32)); unset, one is generated. Not for bearer.',
  })
  @Optional()
  @IsString()
  @MaxLength(TRIGGER_LIMITS.secret.max)
  secret?: string;
}

export class RotateTriggerSecretRequest {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: TRIGGER_LIMITS.graceSeconds.max,
    default: TRIGGER_LIMITS.graceSeconds.default,
    description: 'How long the old secret keeps working (0: stops at once)',
  })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(TRIGGER_LIMITS.graceSeconds.max)
  graceSeconds: number = TRIGGER_LIMITS.graceSeconds.default;
}

export class TriggerResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) workflowId!: string;
  @ApiProperty({ type: String, nullable: true }) name!: string | null;
  @ApiProperty({ description: 'Where the sender posts: POST, no bearer token, authenticated by the scheme' }) url!: string;
  @ApiProperty({ enum: TRIGGER_SCHEMES }) scheme!: TriggerScheme;
  @ApiProperty({ type: String, nullable: true }) signatureHeader!: string | null;
  @ApiProperty({ enum: SIGNATURE_ENCODINGS, nullable: true }) signatureEncoding!: SignatureEncoding | null;
  @ApiProperty({ type: String, nullable: true }) signaturePrefix!: string | null;
  @ApiProperty({ type: String, nullable: true }) mapping!: string | null;
  @ApiProperty({ enum: DEDUPE_SOURCES }) dedupe!: DedupeSource;
  @ApiProperty({ type: String, nullable: true }) dedupeHeader!: string | null;
  @ApiProperty({ enum: RESPONSE_MODES }) responseMode!: ResponseMode;
  @ApiProperty() waitSeconds!: number;
  @ApiProperty({ type: Number, nullable: true }) workflowVersion!: number | null;
  @ApiProperty() enabled!: boolean;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
  @ApiPropertyOptional({ description: 'The secret (bearer: the token); in the answers to create and rotate-secret only' })
  secret?: string;

  static of(trigger: Trigger, publicUrl: string, withSecret = false): TriggerResponse {
    const { secrets: _secrets, organizationId: _org, ...p } = trigger.toProps();
    return {
      ...p,
      url: `${publicUrl}/api/hooks/${p.id}`,
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
      ...(withSecret ? { secret: trigger.currentSecret } : {}),
    };
  }
}

export class TriggerPageResponse {
  @ApiProperty({ type: [TriggerResponse] }) data!: TriggerResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class TriggerEventResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'date-time' }) receivedAt!: string;
  @ApiProperty({ description: "The sender's address" }) source!: string;
  @ApiProperty({ enum: ['started', 'refused'] }) status!: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) runId!: string | null;
  @ApiProperty({ type: String, nullable: true }) dedupeKey!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why no run was started (refused)' }) error!: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The event this one replays' }) replayOf!: string | null;

  static of(e: TriggerEventSummary): TriggerEventResponse {
    return {
      id: e.id,
      receivedAt: e.createdAt.toISOString(),
      source: e.source,
      status: e.status,
      runId: e.runId,
      dedupeKey: e.dedupeKey,
      error: e.error,
      replayOf: e.replayOf,
    };
  }
}

export class TriggerEventDetailResponse extends TriggerEventResponse {
  @ApiProperty({
    description: 'Lower-case names; Authorization and Cookie are not kept',
    type: 'object',
    additionalProperties: { type: 'string' },
  })
  headers!: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: true }) query!: Record<string, unknown>;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'JSON as sent; another content type as text; none: null' }) body!: unknown;

  static detail(e: TriggerEvent): TriggerEventDetailResponse {
    return { ...TriggerEventResponse.of(e), headers: e.headers, query: e.query, body: e.body };
  }
}

export class TriggerEventPageResponse {
  @ApiProperty({ type: [TriggerEventResponse] }) data!: TriggerEventResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

/** What a hook answers: the event and its run (the earlier ones when the delivery is a repeat). */
export class HookResponse {
  @ApiProperty({ format: 'uuid' }) eventId!: string;
  @ApiProperty({ format: 'uuid' }) runId!: string;
  @ApiProperty({ enum: RUN_STATUSES }) status!: RunStatus;
  @ApiPropertyOptional({ ...ANY_JSON, nullable: true, description: 'The run output (sync mode, once finished)' }) output?: unknown;
  @ApiPropertyOptional({ type: FailureResponse, nullable: true }) error?: FailureResponse | null;
  @ApiProperty({ description: 'A repeated delivery: nothing new was started' }) duplicate!: boolean;

  static of(answer: HookAnswer): HookResponse {
    const { run } = answer;
    return {
      eventId: answer.eventId,
      runId: run.id,
      status: run.status,
      ...(answer.waited ? { output: run.output, error: run.error } : {}),
      duplicate: answer.duplicate,
    };
  }
}
