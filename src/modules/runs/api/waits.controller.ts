import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import { type Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { WaitsService } from '../application/waits.service';
import { ApprovalPageResponse, ApprovalResponse, ApprovalsQuery, EventAcceptedResponse, WorkflowEventBody } from './wait.dto';

/** What wait steps wait for: events systems send, approvals people give. */
@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api')
export class WaitsController {
  constructor(private readonly waits: WaitsService) {}

  @Post('events')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Send an event: every wait step of the organization waiting for its name and key takes it and its run goes on; one no wait takes is kept a while (WORKFLOW_EVENT_KEEP_SECONDS) for a wait that begins just after',
  })
  @ApiAcceptedResponse({ type: EventAcceptedResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async publish(@CurrentPrincipal() caller: Principal, @Body() body: WorkflowEventBody): Promise<EventAcceptedResponse> {
    const event = { name: body.name, key: body.key ?? '', data: body.data };
    return { name: event.name, key: event.key, ...(await this.waits.publish(caller, event)) };
  }

  @Get('approvals')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'The approvals waiting on the caller: wait steps it may answer now, oldest first' })
  @ApiOkResponse({ type: ApprovalPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async approvals(@CurrentPrincipal() caller: Principal, @Query() query: ApprovalsQuery): Promise<ApprovalPageResponse> {
    const page = await this.waits.pendingApprovals(caller, query);
    return { data: page.data.map(ApprovalResponse.of), nextCursor: page.nextCursor };
  }
}
