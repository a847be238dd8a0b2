import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AnyRole, CurrentPrincipal, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { ApiKeysService } from '../application/api-keys.service';
import { KeyEventListResponse, KeyEventResponse, KeyPolicyRequest, KeyPolicyResponse } from './api-key.dto';

/** The audit trail of keys and the organization's key policy. */
@ApiTags('service accounts')
@ApiBearerAuth()
@SessionOnly()
@Controller('api/api-keys')
export class ApiKeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Get('policy')
  @Roles('admin')
  @ApiOperation({ summary: "The organization's API key policy" })
  @ApiOkResponse({ type: KeyPolicyResponse })
  @ApiErrors('FORBIDDEN')
  async policy(@CurrentPrincipal() caller: Principal): Promise<KeyPolicyResponse> {
    return { maxLifetimeDays: await this.keys.maxLifetimeDays(caller.organizationId) };
  }

  @Put('policy')
  @Roles('admin')
  @ApiOperation({ summary: 'Cap the lifetime of new keys (existing keys keep theirs)' })
  @ApiOkResponse({ type: KeyPolicyResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN')
  async setPolicy(@CurrentPrincipal() caller: Principal, @Body() body: KeyPolicyRequest): Promise<KeyPolicyResponse> {
    return { maxLifetimeDays: await this.keys.setMaxLifetimeDays(caller.organizationId, body.maxLifetimeDays) };
  }

  @Get(':id/events')
  @AnyRole()
  @ApiOperation({ summary: 'Who created, rotated and revoked the key, and when, oldest first (admins: any key; others: their own)' })
  @ApiOkResponse({ type: KeyEventListResponse })
  @ApiErrors('VALIDATION_FAILED', 'API_KEY_NOT_FOUND')
  async events(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<KeyEventListResponse> {
    return { data: (await this.keys.trail(caller, id)).map(KeyEventResponse.of) };
  }
}
