import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
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
