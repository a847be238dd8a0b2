import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiFoundResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Public, RequiresScope, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors, ApiPublicErrors } from '../../../shared/http/api-errors.decorator';
import { AuthService } from '../application/auth.service';
import { OidcSettingsService } from '../application/oidc-settings.service';
import { OidcSignInService } from '../application/oidc-sign-in.service';
import { TokenPairResponse } from './auth.dto';
import { OidcSettingsRequest, OidcSettingsResponse } from './oidc.dto';
import { SamlRateGuard } from './saml-rate.guard';
import { ExchangeCodeRequest } from './saml.dto';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

@ApiTags('auth')
@Controller('api/auth/oidc')
export class OidcController {
  constructor(
    private readonly settings: OidcSettingsService,
    private readonly signIn: OidcSignInService,
    private readonly auth: AuthService,
  ) {}

  @Get()
  @RequiresScope('organization:read')
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({ summary: "The organization's OpenID Connect settings (enterprise tier); the client secret is never returned" })
  @ApiOkResponse({ type: OidcSettingsResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal): Promise<OidcSettingsResponse> {
    return OidcSettingsResponse.from(await this.settings.settings(caller));
  }

  @Put()
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({
    summary:
      "Set up OpenID Connect sign-in for the organization (enterprise tier); the issuer's discovery document is fetched before it is saved",
    description: 'Needs a signed-in admin: who signs in, and with which role, is never up to an API key (403 FORBIDDEN).',
  })
  @ApiOkResponse({ type: OidcSettingsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async put(@CurrentPrincipal() caller: Principal, @Body() body: OidcSettingsRequest): Promise<OidcSettingsResponse> {
    return OidcSettingsResponse.from(await this.settings.configure(caller, body));
  }

  @Delete()
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Remove OpenID Connect sign-in; users keep their accounts',
    description: 'Needs a signed-in admin: an API key is refused (403 FORBIDDEN).',
  })
  @ApiNoContentResponse()
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async remove(@CurrentPrincipal() caller: Principal): Promise<void> {
    await this.settings.remove(caller);
  }

  @Post('exchange')
  @Public()
  @UseGuards(SamlRateGuard)
  @HttpCode(200)
  @ApiOperation({ summary: 'Trade the one-time code from the OIDC sign-in redirect (60 s, once) for a token pair' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'OIDC_INVALID')
  async exchange(@Body() body: ExchangeCodeRequest): Promise<TokenPairResponse> {
    return this.auth.issue(await this.signIn.exchange(body.code), { via: 'oidc' });
  }

  @Get(':org/login')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiOperation({
    summary:
      "Start a sign-in: 302 to the provider's authorization endpoint (code flow, PKCE S256, state, nonce); `redirect` must be an allowed URL",
  })
  @ApiFoundResponse({ description: 'To the provider' })
  @ApiPublicErrors('VALIDATION_FAILED', 'OIDC_INVALID', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async login(@Param('org') org: string, @Query('redirect') redirect: string | undefined, @Res() res: Response): Promise<void> {
    res.redirect(302, await this.signIn.loginUrl(slug(org), typeof redirect === 'string' ? redirect : undefined));
  }

  @Get(':org/callback')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiOperation({
    summary:
      "The provider's answer (?code=&state=): with Accept: application/json, or when the sign-in named no redirect, the token pair; else a 302 to the redirect with a one-time ?code=",
  })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiFoundResponse({ description: 'To the allowed redirect, with ?code=' })
  @ApiPublicErrors('OIDC_INVALID', 'OIDC_EMAIL_NOT_VERIFIED', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async callback(@Param('org') org: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const { user, redirect } = await this.signIn.callback(slug(org), req.originalUrl.split('?')[1] ?? '');
    // A browser goes back only where the settings allow, with a code, never the tokens.
    if (redirect && req.accepts(['html', 'json']) !== 'json') return res.redirect(302, await this.signIn.redirectWithCode(user, redirect));
    res.status(200).json(await this.auth.issue(user, { via: 'oidc' }));
  }
}

/** Slugs are checked like ids: anything else cannot name an organization. */
function slug(value: string): string {
  return SLUG.test(value) ? value : '-';
}
