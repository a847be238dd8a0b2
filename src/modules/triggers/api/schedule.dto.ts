import { Type } from 'class-transformer';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, IsBoolean, IsIn, IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { ANY_JSON } from '../../../shared/http/json-value.schema';
import { Optional } from '../../../shared/http/optional.decorator';
import { ScheduleDetail } from '../application/schedules.service';
import { CATCH_UPS, CatchUp, Occurrence, OVERLAPS, Overlap, Schedule, SCHEDULE_LIMITS } from '../domain/schedule';

const CRON = { maxLength: 200, example: '30 2 * * *', description: '5 fields: minute hour day-of-month month day-of-week' };
const TIMEZONE = { maxLength: 100, example: 'Europe/Berlin', description: 'IANA time zone the cron is read in (DST included)' };
const OVERLAP = { enum: OVERLAPS, description: "skip (default): no run while the schedule's previous one is still going" };
const CATCH_UP = {
  enum: CATCH_UPS,
  description: 'Occurrences missed while no worker ran: none, latest (default: one run for the latest), all (up to 10)',
};

export class CreateScheduleRequest {
  @ApiProperty(CRON)
  @IsString()
  @MaxLength(200)
  cron!: string;

  @ApiProperty(TIMEZONE)
  @IsString()
  @MaxLength(100)
  timezone!: string;

  @ApiPropertyOptional({ ...ANY_JSON, description: "The runs' input, checked against the workflow's inputSchema when saved" })
  @Allow()
  input?: unknown;

  @ApiPropertyOptional(OVERLAP)
  @Optional()
  @IsIn(OVERLAPS)
  overlap?: Overlap;

  @ApiPropertyOptional(CATCH_UP)
  @Optional()
  @IsIn(CATCH_UPS)
  catchUp?: CatchUp;

  @ApiPropertyOptional({ default: true })
  @Optional()
  @IsBoolean()
  enabled?: boolean;
}

export class UpdateScheduleRequest {
  @ApiPropertyOptional(CRON)
  @Optional()
  @IsString()
  @MaxLength(200)
  cron?: string;

  @ApiPropertyOptional(TIMEZONE)
  @Optional()
  @IsString()
  @MaxLength(100)
  timezone?: string;

  @ApiPropertyOptional({ ...ANY_JSON, description: 'Replaces the input' })
  @Allow()
  input?: unknown;

  @ApiPropertyOptional(OVERLAP)
  @Optional()
  @IsIn(OVERLAPS)
  overlap?: Overlap;

  @ApiPropertyOptional(CATCH_UP)
  @Optional()
  @IsIn(CATCH_UPS)
  catchUp?: CatchUp;

  @ApiPropertyOptional()
  @Optional()
  @IsBoolean()
  enabled?: boolean;
}

export class OccurrencesQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: SCHEDULE_LIMITS.occurrences, default: 10 })
  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(SCHEDULE_LIMITS.occurrences)
  count: number = 10;
}

export class OccurrenceResponse {
  @ApiProperty({ format: 'date-time' }) scheduledFor!: string;
  @ApiProperty({ enum: ['started', 'skipped', 'missed', 'failed'] }) outcome!: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid' }) runId!: string | null;
  @ApiProperty({ format: 'date-time' }) at!: string;

  static of(o: Occurrence): OccurrenceResponse {
    return { scheduledFor: o.scheduledFor.toISOString(), outcome: o.outcome, runId: o.runId, at: o.at.toISOString() };
  }
}

export class ScheduleResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) workflowId!: string;
  @ApiProperty() cron!: string;
  @ApiProperty() timezone!: string;
  @ApiProperty({ ...ANY_JSON, description: 'Any JSON' }) input!: unknown;
  @ApiProperty({ enum: OVERLAPS }) overlap!: Overlap;
  @ApiProperty({ enum: CATCH_UPS }) catchUp!: CatchUp;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'null while paused' }) nextFireAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) lastFiredAt!: string | null;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
  @ApiPropertyOptional({ type: [OccurrenceResponse], description: 'The last occurrences recorded, newest first (GET of one schedule)' })
  recent?: OccurrenceResponse[];

  static of(schedule: Schedule, recent?: Occurrence[]): ScheduleResponse {
    const p = schedule.toProps();
    return {
      id: p.id,
      workflowId: p.workflowId,
      cron: p.cron,
      timezone: p.timezone,
      input: p.input,
      overlap: p.overlap,
      catchUp: p.catchUp,
      enabled: p.enabled,
      nextFireAt: p.nextFireAt?.toISOString() ?? null,
      lastFiredAt: p.lastFiredAt?.toISOString() ?? null,
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
      ...(recent ? { recent: recent.map(OccurrenceResponse.of) } : {}),
    };
  }

  static from(detail: ScheduleDetail): ScheduleResponse {
    return ScheduleResponse.of(detail.schedule, detail.recent);
  }
}

export class SchedulePageResponse {
  @ApiProperty({ type: [ScheduleResponse] }) data!: ScheduleResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class OccurrenceListResponse {
  @ApiProperty({ type: [String], description: 'The next fire times, UTC, oldest first' }) data!: string[];
}
