import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnyRole, CurrentPrincipal, RequiresScope } from '../../../shared/auth/access.decorators';
import { type Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { timeRange } from '../../../shared/pagination/page-query.dto';
import { RunsService } from '../application/runs.service';
import { RunResponse } from '../run.response';
import { RunListQuery, RunPageResponse } from './run.dto';

/** Runs across workflows; one workflow's are at /api/workflows/:id/runs. */
@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api/runs')
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Get()
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The organization's runs of every workflow, newest first (steps left out; get one run for them)" })
  @ApiOkResponse({ type: RunPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: RunListQuery): Promise<RunPageResponse> {
    const page = await this.runs.list(caller, query, {
      status: query.status,
      ...timeRange(query),
      workflowId: query.workflowId,
      id: query.id,
    });
    return { data: page.data.map((r) => RunResponse.of(r, false)), nextCursor: page.nextCursor };
  }
}
