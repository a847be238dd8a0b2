import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { ANY_JSON } from './json-value.schema';
import { Optional } from './optional.decorator';

/** The body of agent execute and workflow run. */
export class ExecuteRequestBody {
  @ApiPropertyOptional({
    ...ANY_JSON,
    description: 'Any JSON; checked against the inputSchema of the agent or workflow',
    example: { text: 'hello' },
  })
  @IsOptional()
  input?: unknown;
}

export const MAX_WAIT_SECONDS = 120;

/** `?wait=` of agent execute and workflow run. */
export class ExecuteQuery {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
    default: 30,
    description: 'Seconds to wait for the result; 0 answers 202 at once',
  })
  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(MAX_WAIT_SECONDS)
  wait: number = 30;
}
