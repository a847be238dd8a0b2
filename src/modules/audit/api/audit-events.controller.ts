import { pipeline, Readable } from 'node:stream';
import { Body, Controller, Get, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, RequiresScope, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { AuditEventsService } from '../application/audit-events.service';
import {
  AuditEventPageResponse,
  AuditEventQuery,
  AuditEventResponse,
  AuditExportQuery,
  AuditRetentionRequest,
  AuditRetentionResponse,
  ChainCheckResponse,
  filtersOf,
} from './audit.dto';

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
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: AuditEventQuery): Promise<AuditEventPageResponse> {
    const page = await this.audit.list(caller, filtersOf(query), { limit: query.limit, cursor: query.cursor });
    return { data: page.data.map(AuditEventResponse.of), nextCursor: page.nextCursor };
  }

  @Get('export')
  @ApiOperation({
    summary:
      'Every event the filters select, oldest first, streamed as CSV (one header row) or JSON lines; the export is itself an event (enterprise)',
  })
  @ApiOkResponse({
    description: 'The events, one a line',
    content: { 'text/csv': { schema: { type: 'string' } }, 'application/x-ndjson': { schema: { type: 'string' } } },
  })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async export(@CurrentPrincipal() caller: Principal, @Query() query: AuditExportQuery, @Res() res: Response): Promise<void> {
    const lines = await this.audit.export(caller, filtersOf(query), query.format);
    // The file name first: attachment() sets a type from its extension, which .jsonl has none of.
    res.attachment(`audit-events.${query.format}`);
    res.status(200).type(query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
    // A failure part-way (the database gone) cuts the response short rather than leaving it open.
    pipeline(Readable.from(lines), res, () => undefined);
  }

  @Get('verify')
  @ApiOperation({
    summary: "Checks the organization's hash chain from its first event to its last, and names the first event that does not follow",
  })
  @ApiOkResponse({ type: ChainCheckResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async verify(@CurrentPrincipal() caller: Principal): Promise<ChainCheckResponse> {
    return ChainCheckResponse.of(await this.audit.verify(caller));
  }

  @Get('settings')
  @ApiOperation({ summary: 'How many days the organization keeps its audit events (enterprise)' })
  @ApiOkResponse({ type: AuditRetentionResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  retention(@CurrentPrincipal() caller: Principal): Promise<AuditRetentionResponse> {
    return this.audit.retention(caller);
  }

  @Put('settings')
  @SessionOnly()
  @ApiOperation({
    summary: 'Sets how many days the organization keeps its audit events, from 30 to the instance cap (enterprise)',
    description:
      'Needs a signed-in admin: an API key is refused (403 FORBIDDEN). The change is an event; events past the retention are purged within the hour, and each purge is an event too.',
  })
  @ApiOkResponse({ type: AuditRetentionResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  setRetention(@CurrentPrincipal() caller: Principal, @Body() body: AuditRetentionRequest): Promise<AuditRetentionResponse> {
    return this.audit.setRetention(caller, body.retentionDays);
  }
}
