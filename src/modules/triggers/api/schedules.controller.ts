import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { SchedulesService } from '../application/schedules.service';
import { RunWithStepsResponse } from '../../runs/run.response';
import {
  CreateScheduleRequest,
  OccurrenceListResponse,
  OccurrencesQuery,
  SchedulePageResponse,
  ScheduleResponse,
  UpdateScheduleRequest,
} from './schedule.dto';

@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api/workflows/:id/schedules')
export class SchedulesController {
  constructor(private readonly schedules: SchedulesService) {}

  @Post()
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Schedule the workflow: a run at each occurrence of a cron expression in a time zone, once across instances' })
  @ApiCreatedResponse({ type: ScheduleResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_LIMIT_REACHED')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Body() body: CreateScheduleRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ScheduleResponse> {
    const created = await this.schedules.create(caller, workflowId, body);
    res.location(`/api/workflows/${workflowId}/schedules/${created.schedule.id}`);
    return ScheduleResponse.from(created);
  }

  @Get()
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The workflow's schedules, newest first" })
  @ApiOkResponse({ type: SchedulePageResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND')
  async list(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Query() query: PageQuery,
  ): Promise<SchedulePageResponse> {
    const page = await this.schedules.list(caller, workflowId, query);
    return { data: page.data.map((s) => ScheduleResponse.of(s)), nextCursor: page.nextCursor };
  }

  @Get(':sid')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'One schedule, with the occurrences it recorded last (started, skipped, missed, failed)' })
  @ApiOkResponse({ type: ScheduleResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
  ): Promise<ScheduleResponse> {
    return ScheduleResponse.from(await this.schedules.get(caller, workflowId, id));
  }

  @Patch(':sid')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Change a schedule; a new cron, time zone or enabled counts from now' })
  @ApiOkResponse({ type: ScheduleResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
    @Body() body: UpdateScheduleRequest,
  ): Promise<ScheduleResponse> {
    return ScheduleResponse.from(await this.schedules.update(caller, workflowId, id, body));
  }

  @Delete(':sid')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a schedule; its runs stay' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async delete(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
  ): Promise<void> {
    await this.schedules.delete(caller, workflowId, id);
  }

  @Post(':sid/pause')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause: no run until resumed (occurrences meanwhile are not caught up)' })
  @ApiOkResponse({ type: ScheduleResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async pause(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
  ): Promise<ScheduleResponse> {
    return ScheduleResponse.from(await this.schedules.update(caller, workflowId, id, { enabled: false }));
  }

  @Post(':sid/resume')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume from the next occurrence after now' })
  @ApiOkResponse({ type: ScheduleResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async resume(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
  ): Promise<ScheduleResponse> {
    return ScheduleResponse.from(await this.schedules.update(caller, workflowId, id, { enabled: true }));
  }

  @Post(':sid/trigger')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(202)
  @ApiOperation({ summary: "Run now with the schedule's input, paused or not" })
  @ApiAcceptedResponse({ type: RunWithStepsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async trigger(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<RunWithStepsResponse> {
    const run = await this.schedules.trigger(caller, workflowId, id);
    res.location(`/api/workflows/${workflowId}/runs/${run.id}`);
    return RunWithStepsResponse.of(run);
  }

  @Get(':sid/occurrences')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'The next fire times (UTC), to see what the time zone and DST make of the cron' })
  @ApiOkResponse({ type: OccurrenceListResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND', 'SCHEDULE_NOT_FOUND')
  async occurrences(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('sid', UuidParam) id: string,
    @Query() query: OccurrencesQuery,
  ): Promise<OccurrenceListResponse> {
    return { data: (await this.schedules.occurrences(caller, workflowId, id, query.count)).map((d) => d.toISOString()) };
  }
}
