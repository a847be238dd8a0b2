import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnyRole, CurrentPrincipal, RequiresScope } from '../../../shared/auth/access.decorators';
import { type Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { timeRange } from '../../../shared/pagination/page-query.dto';
import { ExecutionsService } from '../application/executions.service';
import { ExecutionResponse } from '../execution.response';
import { ExecutionListQuery, ExecutionPageResponse } from './agent.dto';

/** Executions across agents; one agent's are at /api/agents/:id/history. */
@ApiTags('agents')
@ApiBearerAuth()
@Controller('api/executions')
export class ExecutionsController {
  constructor(private readonly executions: ExecutionsService) {}

  @Get()
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({ summary: "The organization's executions of every agent, newest first" })
  @ApiOkResponse({ type: ExecutionPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: ExecutionListQuery): Promise<ExecutionPageResponse> {
    const page = await this.executions.list(caller, query, {
      status: query.status,
      ...timeRange(query),
      agentId: query.agentId,
      id: query.id,
    });
    return { data: page.data.map(ExecutionResponse.of), nextCursor: page.nextCursor };
  }
}
