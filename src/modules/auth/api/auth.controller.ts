import { Body, Controller, Get, HttpCode, Patch, Post, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { AnyRole, CurrentPrincipal, Public, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors, ApiPublicErrors } from '../../../shared/http/api-errors.decorator';
import { UsersService } from '../../users/application/users.service';
import { AuthService } from '../application/auth.service';
import { ChangePasswordRequest, LoginRequest, MeResponse, RefreshRequest, TokenPairResponse } from './auth.dto';

@ApiTags('auth')
@Controller('api/auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly users: UsersService,
  ) {}

  @Post('login')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange email and password for a token pair' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'INVALID_CREDENTIALS', 'RATE_LIMIT_EXCEEDED')
  login(@Body() body: LoginRequest, @Req() req: Request): Promise<TokenPairResponse> {
    return this.auth.login(body.email, body.password, req.ip ?? 'unknown');
  }

  @Post('refresh')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Rotate a refresh token; a reused one revokes its whole family' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'INVALID_CREDENTIALS')
  refresh(@Body() body: RefreshRequest): Promise<TokenPairResponse> {
    return this.auth.refresh(body.refreshToken);
  }

  @Post('logout')
  @SessionOnly()
  @AnyRole()
  @ApiBearerAuth()
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke the refresh token family of this session' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED')
  async logout(@CurrentPrincipal() caller: Principal, @Body() body: RefreshRequest): Promise<void> {
    await this.auth.logout(caller, body.refreshToken);
  }

  @Get('me')
  @SessionOnly()
  @AnyRole()
  @ApiBearerAuth()
  @ApiOkResponse({ type: MeResponse })
  @ApiErrors()
  async me(@CurrentPrincipal() caller: Principal): Promise<MeResponse> {
    return MeResponse.from(await this.auth.me(caller));
  }

  @Patch('me/password')
  @SessionOnly()
  @AnyRole()
  @ApiBearerAuth()
  @HttpCode(204)
  @ApiOperation({ summary: 'Change your own password' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'INVALID_CREDENTIALS')
  async changePassword(@CurrentPrincipal() caller: Principal, @Body() body: ChangePasswordRequest): Promise<void> {
    await this.users.changeOwnPassword(caller, body.currentPassword, body.newPassword);
  }
}
