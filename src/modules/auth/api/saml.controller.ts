import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiConsumes, ApiFoundResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AnyRole, CurrentPrincipal, Public, RequiresScope, Roles, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors, ApiPublicErrors } from '../../../shared/http/api-errors.decorator';
import { AuthService } from '../application/auth.service';
import { SamlLogoutService, SloMessage, SloOutcome } from '../application/saml-logout.service';
import { SamlSettingsService } from '../application/saml-settings.service';
import { SamlSignedIn, SamlSignInService } from '../application/saml-sign-in.service';
import { SamlSpKeysService } from '../application/saml-sp-keys.service';
import { TokenPairResponse } from './auth.dto';
import { SamlAcsGuard } from './saml-acs.guard';
import { SamlRateGuard } from './saml-rate.guard';
import {
  ExchangeCodeRequest,
  RotateSpKeysRequest,
  SamlLogoutRequest,
  SamlLogoutResponse,
  SamlSettingsRequest,
  SamlSettingsResponse,
  SloResultResponse,
  SpKeysResponse,
} from './saml.dto';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

@ApiTags('auth')
@Controller('api/auth/saml')
export class SamlController {
  constructor(
    private readonly settings: SamlSettingsService,
    private readonly signIn: SamlSignInService,
    private readonly auth: AuthService,
    private readonly spKeys: SamlSpKeysService,
    private readonly logout: SamlLogoutService,
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

  @Get('sp-keys')
  @RequiresScope('organization:read')
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({
    summary: "The organization's SAML service provider key pairs in force (signing and encryption), the current one first",
    description: 'The first call makes the first pair. Certificates only: a private key is never shown.',
  })
  @ApiOkResponse({ type: SpKeysResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async listSpKeys(@CurrentPrincipal() caller: Principal): Promise<SpKeysResponse> {
    return SpKeysResponse.from(await this.spKeys.list(caller));
  }

  @Post('sp-keys/rotate')
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Rotate the SAML service provider key pair: new requests are signed with the new key at once',
    description:
      'The previous pair keeps decrypting assertions and stays in the SP metadata for overlapHours (default 168), so the IdP can take up the new metadata meanwhile. Needs a signed-in admin (an API key gets 403 FORBIDDEN).',
  })
  @ApiOkResponse({ type: SpKeysResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async rotateSpKeys(@CurrentPrincipal() caller: Principal, @Body() body: RotateSpKeysRequest): Promise<SpKeysResponse> {
    return SpKeysResponse.from(await this.spKeys.rotate(caller, (body.overlapHours ?? 168) * 3_600_000));
  }

  @Delete('sp-keys/previous')
  @SessionOnly()
  @ApiBearerAuth()
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({
    summary: 'End the overlap of a rotation now: the previous SAML key pairs stop decrypting and leave the SP metadata',
    description: 'Needs a signed-in admin (an API key gets 403 FORBIDDEN). 404 when no previous pair is in its overlap.',
  })
  @ApiOkResponse({ type: SpKeysResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async retirePreviousSpKeys(@CurrentPrincipal() caller: Principal): Promise<SpKeysResponse> {
    return SpKeysResponse.from(await this.spKeys.retirePrevious(caller));
  }

  @Post('exchange')
  @Public()
  @UseGuards(SamlRateGuard)
  @HttpCode(200)
  @ApiOperation({ summary: 'Trade the one-time code from the sign-in redirect (60 s, once) for a token pair' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'SAML_INVALID')
  async exchange(@Body() body: ExchangeCodeRequest): Promise<TokenPairResponse> {
    const { user, familyId } = await this.signIn.exchange(body.code);
    return this.auth.issue(user, { via: 'saml', familyId });
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
  async acs(@Param('org') org: string, @Req() req: Request & { user: SamlSignedIn }, @Res() res: Response): Promise<void> {
    const relayState = (req.body as { RelayState?: unknown }).RelayState;
    const wantsJson = req.accepts(['html', 'json']) === 'json';
    // A browser goes back only where the settings allow, with a code, never the tokens.
    if (!wantsJson && typeof relayState === 'string' && relayState) {
      return res.redirect(302, await this.signIn.redirectWithCode(slug(org), req.user, relayState));
    }
    res.status(200).json(await this.auth.issue(req.user.user, { via: 'saml', familyId: req.user.familyId }));
  }

  @Post(':org/logout')
  @SessionOnly()
  @AnyRole()
  @ApiBearerAuth()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Single logout, SP-initiated: ends SAML sessions of the caller and answers the IdP logout URL',
    description:
      "For a session that began with a SAML sign-in in this organization (else 403 FORBIDDEN). Ends the session of `refreshToken` (without it, all of the caller's SAML sessions) and every access token of the caller, then answers `logoutUrl`: the IdP's single logout URL with our signed LogoutRequest, where the browser goes next (null when the settings name no idpSloUrl).",
  })
  @ApiOkResponse({ type: SamlLogoutResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async spLogout(
    @CurrentPrincipal() caller: Principal,
    @Param('org') org: string,
    @Body() body: SamlLogoutRequest,
  ): Promise<SamlLogoutResponse> {
    return this.logout.logout(caller, slug(org), body.refreshToken);
  }

  @Get(':org/slo')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiOperation({
    summary: 'Single logout endpoint, HTTP-Redirect binding: LogoutRequests and LogoutResponses from the IdP, signed in the query',
    description:
      "A LogoutRequest signed by the IdP ends every SAML session of the NameID it names (narrowed to its SessionIndex when given), then 302 to the IdP's SLO URL with our signed LogoutResponse (200 JSON without an idpSloUrl). A LogoutResponse to our LogoutRequest is checked and answered 200. Anything unsigned, signed by another key or with SHA-1: 401 SAML_INVALID, and nothing ends.",
  })
  @ApiOkResponse({ type: SloResultResponse })
  @ApiFoundResponse({ description: "To the IdP's single logout URL, with our signed LogoutResponse" })
  @ApiPublicErrors('SAML_INVALID', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async sloRedirect(@Param('org') org: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const message: SloMessage = {
      binding: 'redirect',
      fields: req.query as SloMessage['fields'],
      rawQuery: req.originalUrl.split('?')[1] ?? '',
    };
    reply(res, await this.logout.receive(slug(org), message));
  }

  @Post(':org/slo')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiOperation({
    summary: 'Single logout endpoint, HTTP-POST binding: LogoutRequests and LogoutResponses from the IdP, signed in the XML',
    description: 'As the HTTP-Redirect binding (GET), with the message in a form post.',
  })
  @ApiOkResponse({ type: SloResultResponse })
  @ApiFoundResponse({ description: "To the IdP's single logout URL, with our signed LogoutResponse" })
  @ApiPublicErrors('SAML_INVALID', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async sloPost(@Param('org') org: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const message: SloMessage = { binding: 'post', fields: (req.body ?? {}) as SloMessage['fields'], rawQuery: '' };
    reply(res, await this.logout.receive(slug(org), message));
  }
}

/** The SLO endpoint's answer: back to the IdP, or the outcome as JSON. */
function reply(res: Response, outcome: SloOutcome): void {
  if ('redirect' in outcome) return res.redirect(302, outcome.redirect);
  res.status(200).json(outcome.result);
}

/** Slugs are checked like ids: anything else cannot name an organization. */
function slug(value: string): string {
  return SLUG.test(value) ? value : '-';
}
