import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import { type Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { WorkflowsService } from '../application/workflows.service';
import {
  WorkflowDefinitionBody,
  WorkflowPageResponse,
  WorkflowResponse,
  WorkflowVersionPageResponse,
  WorkflowVersionResponse,
} from './workflow.dto';

@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api/workflows')
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Post()
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Define a workflow; every problem of the definition is reported at once' })
  @ApiCreatedResponse({ type: WorkflowResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_INVALID', 'FORBIDDEN')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: WorkflowDefinitionBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<WorkflowResponse> {
    const workflow = await this.workflows.create(caller, { ...body });
    res.location(`/api/workflows/${workflow.id}`);
    return WorkflowResponse.of(workflow);
  }

  @Get()
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The organization's workflows, newest first" })
  @ApiOkResponse({ type: WorkflowPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<WorkflowPageResponse> {
    const page = await this.workflows.list(caller, query);
    return { data: page.data.map(WorkflowResponse.of), nextCursor: page.nextCursor };
  }

  @Get('definition-schema')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({
    summary: "The JSON Schema (draft-07) of a definition's shape, for editors",
    description:
      'Covers the shape only: a definition that passes it may still be refused for what the schema cannot see (unknown steps in needs, cycles, expressions, agents and actions of the organization).',
  })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true } })
  definitionSchema(): Record<string, unknown> {
    return this.workflows.definitionSchema();
  }

  @Get(':id')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'One workflow at its current version' })
  @ApiOkResponse({ type: WorkflowResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<WorkflowResponse> {
    return WorkflowResponse.of(await this.workflows.get(caller.organizationId, id));
  }

  @Put(':id')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Replace the definition: a new version; runs keep the version they started with' })
  @ApiOkResponse({ type: WorkflowResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_INVALID', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND')
  async redefine(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: WorkflowDefinitionBody,
  ): Promise<WorkflowResponse> {
    return WorkflowResponse.of(await this.workflows.redefine(caller, id, { ...body }));
  }

  @Get(':id/versions')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The workflow's versions, newest first" })
  @ApiOkResponse({ type: WorkflowVersionPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND')
  async versions(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: PageQuery,
  ): Promise<WorkflowVersionPageResponse> {
    const page = await this.workflows.versions(caller, id, query);
    return { data: page.data.map(WorkflowVersionResponse.of), nextCursor: page.nextCursor };
  }

  @Delete(':id')
  @RequiresScope('workflows:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a workflow; its runs stay readable' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.workflows.delete(caller, id);
  }
}
