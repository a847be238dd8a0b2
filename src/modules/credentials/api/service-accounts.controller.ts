import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { ApiKeysService, KeyHolder } from '../application/api-keys.service';
import { ServiceAccountsService } from '../application/service-accounts.service';
import {
  ApiKeyPageResponse,
  ApiKeyResponse,
  CreateApiKeyRequest,
  CreateServiceAccountRequest,
  IssuedApiKeyResponse,
  RotateApiKeyRequest,
  ServiceAccountPageResponse,
  ServiceAccountResponse,
  UpdateServiceAccountRequest,
} from './api-key.dto';
import { keyRequest } from './key-request';

/** Service accounts and their keys: managed by admins, signed in (never with a key). */
@ApiTags('service accounts')
@ApiBearerAuth()
@Roles('admin')
@SessionOnly()
@Controller('api/service-accounts')
export class ServiceAccountsController {
  constructor(
    private readonly accounts: ServiceAccountsService,
    private readonly keys: ApiKeysService,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Create a service account: a principal of the organization that holds API keys and takes no seat' })
  @ApiCreatedResponse({ type: ServiceAccountResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_LIMIT_REACHED')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: CreateServiceAccountRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ServiceAccountResponse> {
    const account = await this.accounts.create(caller, body);
    res.location(`/api/service-accounts/${account.id}`);
    return ServiceAccountResponse.of(account);
  }

  @Get()
  @ApiOperation({ summary: "The organization's service accounts, newest first" })
  @ApiOkResponse({ type: ServiceAccountPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<ServiceAccountPageResponse> {
    const page = await this.accounts.list(caller, query);
    return { data: page.data.map(ServiceAccountResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One service account' })
  @ApiOkResponse({ type: ServiceAccountResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<ServiceAccountResponse> {
    return ServiceAccountResponse.of(await this.accounts.get(caller, id));
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Rename, change the role of, disable or enable a service account' })
  @ApiOkResponse({ type: ServiceAccountResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: UpdateServiceAccountRequest,
  ): Promise<ServiceAccountResponse> {
    return ServiceAccountResponse.of(await this.accounts.update(caller, id, body));
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a service account and its keys' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.accounts.delete(caller, id);
  }

  @Post(':id/api-keys')
  @ApiOperation({ summary: 'Create a key for the service account; the answer shows the key, once' })
  @ApiCreatedResponse({ type: IssuedApiKeyResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'SERVICE_ACCOUNT_NOT_FOUND', 'API_KEY_LIMIT_REACHED')
  async createKey(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: CreateApiKeyRequest,
  ): Promise<IssuedApiKeyResponse> {
    return IssuedApiKeyResponse.from(await this.keys.create(caller, holder(id), keyRequest(body)));
  }

  @Get(':id/api-keys')
  @ApiOperation({ summary: "The service account's keys that are not revoked, newest first (never the keys themselves)" })
  @ApiOkResponse({ type: ApiKeyPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND')
  async listKeys(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: PageQuery,
  ): Promise<ApiKeyPageResponse> {
    const page = await this.keys.list(caller, holder(id), query);
    return { data: page.data.map(ApiKeyResponse.of), nextCursor: page.nextCursor };
  }

  @Delete(':id/api-keys/:keyId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a key: refused everywhere within a second' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND', 'API_KEY_NOT_FOUND')
  async revokeKey(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('keyId', UuidParam) keyId: string,
  ): Promise<void> {
    await this.keys.revoke(caller, holder(id), keyId);
  }

  @Post(':id/api-keys/:keyId/rotate')
  @HttpCode(200)
  @ApiOperation({ summary: 'A new secret for the key; the previous one keeps working for graceSeconds' })
  @ApiOkResponse({ type: IssuedApiKeyResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'SERVICE_ACCOUNT_NOT_FOUND', 'API_KEY_NOT_FOUND')
  async rotateKey(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('keyId', UuidParam) keyId: string,
    @Body() body: RotateApiKeyRequest,
  ): Promise<IssuedApiKeyResponse> {
    return IssuedApiKeyResponse.from(await this.keys.rotate(caller, holder(id), keyId, body.graceSeconds ?? 0));
  }
}

function holder(id: string): KeyHolder {
  return { type: 'service_account', id };
}
