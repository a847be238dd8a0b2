import { ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsISO8601, IsString, Max, MaxLength, Min } from 'class-validator';
import { Optional } from '../http/optional.decorator';

export class PageQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit: number = 20;

  @ApiPropertyOptional({ description: 'The nextCursor of the previous page' })
  @Optional()
  @IsString()
  @MaxLength(200)
  cursor?: string;
}

/** A time range: records created (or, for audit events, that occurred) at or after `since` and before `until`. */
export class TimeRangeQuery {
  @ApiPropertyOptional({ example: '2026-01-01T00:00:00Z', description: 'Only records created at or after this time' })
  @Optional()
  @IsISO8601({ strict: true })
  since?: string;

  @ApiPropertyOptional({ example: '2026-02-01T00:00:00Z', description: 'Only records created before this time' })
  @Optional()
  @IsISO8601({ strict: true })
  until?: string;
}

/** A history's page (runs, executions) with its time range. */
export class HistoryPageQuery extends IntersectionType(PageQuery, TimeRangeQuery) {}

/** The time range of a query as dates, for the repositories' filters. */
export function timeRange(query: TimeRangeQuery): { since?: Date; until?: Date } {
  return {
    since: query.since ? new Date(query.since) : undefined,
    until: query.until ? new Date(query.until) : undefined,
  };
}
