import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { AuditEventsService } from '../application/audit-events.service';
import { AuditEventPageResponse, AuditEventQuery, AuditEventResponse, ChainCheckResponse } from './audit.dto';

/** The organization's audit log: admins read it; nobody changes it. */
@ApiTags('audit')
@ApiBearerAuth()
@Roles('admin')
@RequiresScope('audit:read')
@Controller('api/audit-events')
export class AuditEventsController {
  constructor(private readonly audit: AuditEventsService) {}

  @Get()
  @ApiOperation({ summary: "The organization's audit events, newest first, filtered by action, actor, target and time" })
  @ApiOkResponse({ type: AuditEventPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: AuditEventQuery): Promise<AuditEventPageResponse> {
    const { limit, cursor, since, until, ...filters } = query;
    const page = await this.audit.list(
      caller,
      { ...filters, since: since ? new Date(since) : undefined, until: until ? new Date(until) : undefined },
      { limit, cursor },
    );
    return { data: page.data.map(AuditEventResponse.of), nextCursor: page.nextCursor };
  }

  @Get('verify')
  @ApiOperation({
    summary: "Checks the organization's hash chain from its first event to its last, and names the first event that does not follow",
  })
  @ApiOkResponse({ type: ChainCheckResponse })
  @ApiErrors('FORBIDDEN')
  async verify(@CurrentPrincipal() caller: Principal): Promise<ChainCheckResponse> {
    return ChainCheckResponse.of(await this.audit.verify(caller));
  }
}
