import { ApiProperty, ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, Matches, MaxLength } from 'class-validator';
import { AUDIT_ACTIONS } from '../../../shared/audit/audit-trail';
import { Optional } from '../../../shared/http/optional.decorator';
import { UUID } from '../../../shared/http/uuid-param.pipe';
import { PageQuery, timeRange, TimeRangeQuery } from '../../../shared/pagination/page-query.dto';
import { ChainCheck } from '../domain/audit-chain';
import { AuditEvent, AuditFilters, presented } from '../domain/audit-event';

const ACTIONS = Object.keys(AUDIT_ACTIONS);

/** The filters of the list and of the export. */
class AuditFilterQuery extends TimeRangeQuery {
  @ApiPropertyOptional({ enum: ACTIONS, description: 'Only events of this action' })
  @Optional()
  @IsIn(ACTIONS)
  action?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only events by this user, service account or key' })
  @Optional()
  @Matches(UUID, { message: '$property must be a UUID' })
  actorId?: string;

  @ApiPropertyOptional({ description: "Only events about this object (its id: a UUID, a plugin's slug)" })
  @Optional()
  @IsString()
  @MaxLength(200)
  targetId?: string;
}

export class AuditEventQuery extends IntersectionType(PageQuery, AuditFilterQuery) {}

export class AuditExportQuery extends AuditFilterQuery {
  @ApiProperty({ enum: ['csv', 'jsonl'], description: 'CSV with a header row, or one JSON object a line' })
  @IsIn(['csv', 'jsonl'])
  format!: 'csv' | 'jsonl';
}

/** The query's filters as the service takes them. */
export function filtersOf(query: AuditFilterQuery): AuditFilters {
  const { action, actorId, targetId } = query;
  return { action, actorId, targetId, ...timeRange(query) };
}

class AuditActorResponse {
  @ApiProperty({ enum: ['user', 'service_account', 'api_key', 'system', 'anonymous'] }) type!: string;
  @ApiProperty({ type: String, nullable: true }) id!: string | null;
  @ApiProperty({ type: String, nullable: true }) name!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The client address the request came from' }) ip!: string | null;
  @ApiProperty({ type: String, nullable: true }) userAgent!: string | null;
  @ApiProperty({ enum: ['password', 'saml', 'oidc', 'key'], nullable: true, description: 'How the actor proved who it is' })
  via!: string | null;
}

class AuditTargetResponse {
  @ApiProperty({ example: 'agent' }) type!: string;
  @ApiProperty({ type: String, nullable: true }) id!: string | null;
  @ApiProperty({ type: String, nullable: true }) name!: string | null;
}

export class AuditEventResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() occurredAt!: string;
  @ApiProperty({ format: 'uuid' }) organizationId!: string;
  @ApiProperty({ type: AuditActorResponse }) actor!: AuditActorResponse;
  @ApiProperty({ enum: ACTIONS }) action!: string;
  @ApiProperty({ type: AuditTargetResponse, nullable: true }) target!: AuditTargetResponse | null;
  @ApiProperty({ enum: ['success', 'failure', 'denied'] }) outcome!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The X-Request-Id of the request that did it' }) requestId!: string | null;
  @ApiProperty({
    type: Object,
    nullable: true,
    description: 'The object before and after (`before`, `after`), every secret `[redacted]`',
  })
  changes!: Record<string, unknown> | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: "The event's place in the organization's chain; null for a few seconds, until sealed",
  })
  sequence!: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "SHA-256 (hex) over the previous event's hash and this event; null until sealed",
  })
  hash!: string | null;

  static of(event: AuditEvent): AuditEventResponse {
    return presented(event) as AuditEventResponse;
  }
}

export class AuditEventPageResponse {
  @ApiProperty({ type: [AuditEventResponse], description: 'Newest first' }) data!: AuditEventResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

class ChainBreakResponse {
  @ApiProperty({ description: 'Where the chain stops holding' }) sequence!: number;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'The event there; null when it is missing' }) eventId!:
    string | null;
  @ApiProperty({ example: 'its content does not match its hash (it was changed)' }) reason!: string;
}

export class ChainCheckResponse {
  @ApiProperty({ description: 'True when every sealed event follows from the one before it' }) valid!: boolean;
  @ApiProperty({ description: 'Sealed events checked' }) checked!: number;
  @ApiProperty({ description: 'Events not sealed yet' }) unsealed!: number;
  @ApiProperty({ type: ChainBreakResponse, nullable: true }) firstBreak!: ChainBreakResponse | null;

  static of(check: ChainCheck): ChainCheckResponse {
    return { valid: !check.firstBreak, ...check };
  }
}

export class AuditRetentionRequest {
  @ApiProperty({ example: 365, description: "Days events are kept: from 30 to the instance's AUDIT_RETENTION_DAYS" })
  @IsInt()
  retentionDays!: number;
}

export class AuditRetentionResponse {
  @ApiProperty({ example: 365, description: 'Days events are kept; older ones are purged, and each purge is an event' })
  retentionDays!: number;
  @ApiProperty({ example: 3650, description: 'The most this instance allows (AUDIT_RETENTION_DAYS)' })
  maxRetentionDays!: number;
}
