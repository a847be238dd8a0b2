import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiConsumes, ApiFoundResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Public, RequiresScope, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors, ApiPublicErrors } from '../../../shared/http/api-errors.decorator';
import { User } from '../../users/domain/user';
import { AuthService } from '../application/auth.service';
import { SamlSettingsService } from '../application/saml-settings.service';
import { SamlSignInService } from '../application/saml-sign-in.service';
import { TokenPairResponse } from './auth.dto';
import { SamlAcsGuard } from './saml-acs.guard';
import { SamlRateGuard } from './saml-rate.guard';
import { ExchangeCodeRequest, SamlSettingsRequest, SamlSettingsResponse } from './saml.dto';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

@ApiTags('auth')
@Controller('api/auth/saml')
export class SamlController {
  constructor(
    private readonly settings: SamlSettingsService,
    private readonly signIn: SamlSignInService,
    private readonly auth: AuthService,
  ) {}

  @Get()
  @RequiresScope('organization:read')
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({ summary: "The organization's SAML settings (enterprise tier)" })
  @ApiOkResponse({ type: SamlSettingsResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal): Promise<SamlSettingsResponse> {
    return SamlSettingsResponse.from(await this.settings.settings(caller));
  }

  @Put()
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({
    summary: 'Set up SAML sign-in for the organization (enterprise tier); checked before it is saved',
    description: 'Needs a signed-in admin: who signs in, and with which role, is never up to an API key (403 FORBIDDEN).',
  })
  @ApiOkResponse({ type: SamlSettingsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async put(@CurrentPrincipal() caller: Principal, @Body() body: SamlSettingsRequest): Promise<SamlSettingsResponse> {
    return SamlSettingsResponse.from(await this.settings.configure(caller, body));
  }

  @Delete()
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Remove SAML sign-in; users keep their accounts',
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
  @ApiOperation({ summary: 'Trade the one-time code from the sign-in redirect (60 s, once) for a token pair' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'SAML_INVALID')
  async exchange(@Body() body: ExchangeCodeRequest): Promise<TokenPairResponse> {
    return this.auth.issue(await this.signIn.exchange(body.code), { via: 'saml' });
  }

  @Get(':org/metadata')
  @Public()
  @ApiOperation({ summary: "The service provider's metadata for the organization's IdP" })
  @ApiOkResponse({ description: 'SAML metadata XML (application/samlmetadata+xml)' })
  @ApiPublicErrors('NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async metadata(@Param('org') org: string, @Res() res: Response): Promise<void> {
    const xml = await this.signIn.metadata(slug(org));
    res.type('application/samlmetadata+xml; charset=utf-8').send(xml);
  }

  @Get(':org/login')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiOperation({ summary: 'Start a sign-in: 302 to the IdP with an AuthnRequest; `redirect` must be an allowed URL' })
  @ApiFoundResponse({ description: 'To the IdP' })
  @ApiPublicErrors('VALIDATION_FAILED', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async login(@Param('org') org: string, @Query('redirect') redirect: string | undefined, @Res() res: Response): Promise<void> {
    res.redirect(302, await this.signIn.loginUrl(slug(org), typeof redirect === 'string' ? redirect : undefined));
  }

  @Post(':org/acs')
  @Public()
  @UseGuards(SamlRateGuard, SamlAcsGuard)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({
    summary:
      "The IdP's answer (HTTP-POST binding): with Accept: application/json, the token pair; else a 302 to the RelayState with a one-time ?code=",
  })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiFoundResponse({ description: 'To the allowed redirect, with ?code=' })
  @ApiPublicErrors('SAML_INVALID', 'VALIDATION_FAILED', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async acs(@Param('org') org: string, @Req() req: Request & { user: User }, @Res() res: Response): Promise<void> {
    const relayState = (req.body as { RelayState?: unknown }).RelayState;
    const wantsJson = req.accepts(['html', 'json']) === 'json';
    // A browser goes back only where the settings allow, with a code, never the tokens.
    if (!wantsJson && typeof relayState === 'string' && relayState) {
      return res.redirect(302, await this.signIn.redirectWithCode(slug(org), req.user, relayState));
    }
    res.status(200).json(await this.auth.issue(req.user, { via: 'saml' }));
  }
}

/** Slugs are checked like ids: anything else cannot name an organization. */
function slug(value: string): string {
  return SLUG.test(value) ? value : '-';
}
