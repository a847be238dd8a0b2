import { Body, Controller, Get, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, OperatorOnly, RequiresScope, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { OrganizationsService } from '../application/organizations.service';
import {
  CreatedOrganizationResponse,
  CreateOrganizationRequest,
  OrganizationPageResponse,
  UpdateOrganizationRequest,
} from './organization.dto';
import { OrganizationResponse } from '../organization.response';

@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/organizations')
export class OrganizationsController {
  constructor(private readonly organizations: OrganizationsService) {}

  @Get('current')
  @RequiresScope('organization:read')
  @AnyRole()
  @ApiOperation({ summary: "The caller's organization" })
  @ApiOkResponse({ type: OrganizationResponse })
  @ApiErrors()
  async current(@CurrentPrincipal() caller: Principal): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.current(caller));
  }

  @Get()
  @SessionOnly()
  @OperatorOnly()
  @ApiOperation({ summary: 'All organizations (instance operators)' })
  @ApiOkResponse({ type: OrganizationPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async list(@Query() query: PageQuery): Promise<OrganizationPageResponse> {
    const page = await this.organizations.list(query);
    return { data: page.data.map(OrganizationResponse.from), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @SessionOnly()
  @OperatorOnly()
  @ApiOperation({ summary: 'One organization (instance operators)' })
  @ApiOkResponse({ type: OrganizationResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'ORGANIZATION_NOT_FOUND')
  async get(@Param('id', UuidParam) id: string): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.require(id));
  }

  @Patch(':id')
  @SessionOnly()
  @OperatorOnly()
  @ApiOperation({ summary: "Rename an organization or assign its tier, up to the license's tier (instance operators)" })
  @ApiOkResponse({ type: OrganizationResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'ORGANIZATION_NOT_FOUND', 'LICENSE_REQUIRED')
  async update(@Param('id', UuidParam) id: string, @Body() body: UpdateOrganizationRequest): Promise<OrganizationResponse> {
    return OrganizationResponse.from(await this.organizations.change(id, body));
  }

  @Post()
  @SessionOnly()
  @OperatorOnly()
  @ApiOperation({ summary: 'Create an organization with its first admin (instance operators)' })
  @ApiCreatedResponse({ type: CreatedOrganizationResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'ORGANIZATION_SLUG_TAKEN', 'EMAIL_TAKEN', 'LICENSE_REQUIRED', 'SEAT_LIMIT_REACHED')
  async create(@Body() body: CreateOrganizationRequest, @Res({ passthrough: true }) res: Response): Promise<CreatedOrganizationResponse> {
    const { organization, admin } = await this.organizations.create(body);
    res.location(`/api/organizations/${organization.id}`);
    return { ...OrganizationResponse.from(organization), adminUserId: admin.id };
  }
}
