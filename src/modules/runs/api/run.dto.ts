import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, Matches } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator';
import { UUID } from '../../../shared/http/uuid-param.pipe';
import { STEP_ID } from '../../workflows/domain/definition';
import { HistoryPageQuery } from '../../../shared/pagination/page-query.dto';
import { RUN_STATUSES, RunStatus } from '../domain/run';
import { RunResponse } from '../run.response';

export class RunHistoryQuery extends HistoryPageQuery {
  @ApiPropertyOptional({ enum: RUN_STATUSES })
  @Optional()
  @IsIn(RUN_STATUSES)
  status?: RunStatus;
}

/** `GET /api/runs`: a workflow's history query, across workflows. */
export class RunListQuery extends RunHistoryQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this workflow's runs (one of another organization finds none)" })
  @Optional()
  @Matches(UUID, { message: '$property must be a UUID' })
  workflowId?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only the run with this id: a search by id' })
  @Optional()
  @Matches(UUID, { message: '$property must be a UUID' })
  id?: string;
}

/** `POST .../runs/:runId/retry`: where the retry starts again, and on which version. */
export class RetryRunRequest {
  @ApiPropertyOptional({
    pattern: STEP_ID,
    example: 'charge',
    description:
      'The step to run again, with every step downstream of it; default: the steps that did not succeed (failed, canceled, never run)',
  })
  @Optional()
  @Matches(new RegExp(STEP_ID), { message: '$property must be a step id' })
  fromStep?: string;

  @ApiPropertyOptional({
    enum: ['same', 'latest'],
    default: 'same',
    description: "`same`: the old run's version; `latest`: the workflow's current one (steps are kept by id, only those in both)",
  })
  @Optional()
  @IsIn(['same', 'latest'])
  version?: 'same' | 'latest';
}

export class RunPageResponse {
  @ApiProperty({ type: [RunResponse] }) data!: RunResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
