import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnyRole, CurrentPrincipal, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { ApiKeysService, KeyHolder } from '../application/api-keys.service';
import { ApiKeyPageResponse, ApiKeyResponse, CreateApiKeyRequest, IssuedApiKeyResponse, RotateApiKeyRequest } from './api-key.dto';
import { keyRequest } from './key-request';

const ME: KeyHolder = { type: 'me' };

/**
 * The caller's own keys: never more than the caller's role (checked on each request), revoked
 * by a password change or by being disabled or deleted.
 */
@ApiTags('auth')
@ApiBearerAuth()
@AnyRole()
@SessionOnly()
@Controller('api/auth/me/api-keys')
export class PersonalKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Post()
  @ApiOperation({ summary: 'Create a personal API key; the answer shows the key, once' })
  @ApiCreatedResponse({ type: IssuedApiKeyResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'API_KEY_LIMIT_REACHED')
  async create(@CurrentPrincipal() caller: Principal, @Body() body: CreateApiKeyRequest): Promise<IssuedApiKeyResponse> {
    return IssuedApiKeyResponse.from(await this.keys.create(caller, ME, keyRequest(body)));
  }

  @Get()
  @ApiOperation({ summary: 'Your keys that are not revoked, newest first (never the keys themselves)' })
  @ApiOkResponse({ type: ApiKeyPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<ApiKeyPageResponse> {
    const page = await this.keys.list(caller, ME, query);
    return { data: page.data.map(ApiKeyResponse.of), nextCursor: page.nextCursor };
  }

  @Delete(':keyId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke one of your keys' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'API_KEY_NOT_FOUND')
  async revoke(@CurrentPrincipal() caller: Principal, @Param('keyId', UuidParam) keyId: string): Promise<void> {
    await this.keys.revoke(caller, ME, keyId);
  }

  @Post(':keyId/rotate')
  @HttpCode(200)
  @ApiOperation({ summary: 'A new secret for one of your keys; the previous one keeps working for graceSeconds' })
  @ApiOkResponse({ type: IssuedApiKeyResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'API_KEY_NOT_FOUND')
  async rotate(
    @CurrentPrincipal() caller: Principal,
    @Param('keyId', UuidParam) keyId: string,
    @Body() body: RotateApiKeyRequest,
  ): Promise<IssuedApiKeyResponse> {
    return IssuedApiKeyResponse.from(await this.keys.rotate(caller, ME, keyId, body.graceSeconds ?? 0));
  }
}
