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
import { AppConfig } from '../../../config/app-config';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { TriggersService } from '../application/triggers.service';
import {
  CreateTriggerRequest,
  HookResponse,
  RotateTriggerSecretRequest,
  TriggerEventDetailResponse,
  TriggerEventPageResponse,
  TriggerEventResponse,
  TriggerPageResponse,
  TriggerResponse,
  UpdateTriggerRequest,
} from './trigger.dto';

@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api/workflows/:id/triggers')
export class TriggersController {
  constructor(
    private readonly triggers: TriggersService,
    private readonly config: AppConfig,
  ) {}

  @Post()
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({
    summary: 'Add an inbound webhook trigger: a public URL whose authenticated requests start runs, each delivery once',
  })
  @ApiCreatedResponse({ type: TriggerResponse, description: 'With its secret, shown this once' })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'TRIGGER_LIMIT_REACHED')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Body() body: CreateTriggerRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<TriggerResponse> {
    const trigger = await this.triggers.create(caller, workflowId, body);
    res.location(`/api/workflows/${workflowId}/triggers/${trigger.id}`);
    return TriggerResponse.of(trigger, this.config.publicUrl, true);
  }

  @Get()
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The workflow's webhook triggers, newest first" })
  @ApiOkResponse({ type: TriggerPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND')
  async list(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Query() query: PageQuery,
  ): Promise<TriggerPageResponse> {
    const page = await this.triggers.list(caller, workflowId, query);
    return { data: page.data.map((t) => TriggerResponse.of(t, this.config.publicUrl)), nextCursor: page.nextCursor };
  }

  @Get(':tid')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'One webhook trigger (never its secret)' })
  @ApiOkResponse({ type: TriggerResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND')
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
  ): Promise<TriggerResponse> {
    return TriggerResponse.of(await this.triggers.get(caller, workflowId, id), this.config.publicUrl);
  }

  @Patch(':tid')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Change a webhook trigger (not its scheme; rotate-secret for its secret)' })
  @ApiOkResponse({ type: TriggerResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
    @Body() body: UpdateTriggerRequest,
  ): Promise<TriggerResponse> {
    return TriggerResponse.of(await this.triggers.update(caller, workflowId, id, body), this.config.publicUrl);
  }

  @Delete(':tid')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a webhook trigger and its events; its URL answers 404 at once; its runs stay' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND')
  async delete(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
  ): Promise<void> {
    await this.triggers.delete(caller, workflowId, id);
  }

  @Post(':tid/rotate-secret')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({ summary: 'A new secret (shown this once); the old one keeps working for graceSeconds' })
  @ApiOkResponse({ type: TriggerResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND')
  async rotateSecret(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
    @Body() body: RotateTriggerSecretRequest,
  ): Promise<TriggerResponse> {
    const trigger = await this.triggers.rotateSecret(caller, workflowId, id, body.graceSeconds);
    return TriggerResponse.of(trigger, this.config.publicUrl, true);
  }

  @Get(':tid/events')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'The requests the trigger received and authenticated, newest first (time, source, status, run)' })
  @ApiOkResponse({ type: TriggerEventPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND')
  async events(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
    @Query() query: PageQuery,
  ): Promise<TriggerEventPageResponse> {
    const page = await this.triggers.events(caller, workflowId, id, query);
    return { data: page.data.map(TriggerEventResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':tid/events/:eid')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'One received request: headers (without credentials), query and body' })
  @ApiOkResponse({ type: TriggerEventDetailResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND', 'TRIGGER_EVENT_NOT_FOUND')
  async event(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
    @Param('eid', UuidParam) eventId: string,
  ): Promise<TriggerEventDetailResponse> {
    return TriggerEventDetailResponse.detail(await this.triggers.event(caller, workflowId, id, eventId));
  }

  @Post(':tid/events/:eid/replay')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(202)
  @ApiOperation({ summary: "A new run from a received request, mapped with the trigger's current mapping" })
  @ApiAcceptedResponse({ type: HookResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'TRIGGER_NOT_FOUND', 'TRIGGER_EVENT_NOT_FOUND')
  async replay(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) workflowId: string,
    @Param('tid', UuidParam) id: string,
    @Param('eid', UuidParam) eventId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<HookResponse> {
    const answer = await this.triggers.replay(caller, workflowId, id, eventId);
    res.location(`/api/workflows/${workflowId}/runs/${answer.run.id}`);
    return HookResponse.of({ ...answer, waited: false });
  }
}
