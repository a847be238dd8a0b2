import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req, Res, UseGuards } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiConsumes,
  ApiFoundResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Public, Roles } from '../../../shared/auth/access.decorators';
import { ROLES, type Principal, type Role } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { ApiErrors, ApiPublicErrors } from '../../../shared/http/api-errors.decorator';
import { User } from '../../users/domain/user';
import { TokenPairResponse } from '../api/auth.dto';
import { AuthService } from '../application/auth.service';
import { SamlAcsGuard } from './saml-acs.guard';
import { SamlRateGuard } from './saml-rate.guard';
import { isAllowedRedirect, SamlSettings } from './saml-settings';
import { SamlService, ServiceProvider } from './saml.service';
import { Optional } from '../../../shared/http/optional.decorator';

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

class AttributeNames {
  @ApiPropertyOptional({ default: 'email', description: 'Else the NameID is the email' })
  @Optional()
  @IsString()
  @MaxLength(200)
  email?: string;
  @ApiPropertyOptional({ default: 'firstName' }) @IsOptional() @IsString() @MaxLength(200) firstName?: string;
  @ApiPropertyOptional({ default: 'lastName' }) @IsOptional() @IsString() @MaxLength(200) lastName?: string;
  @ApiPropertyOptional({ default: 'groups' }) @IsOptional() @IsString() @MaxLength(200) groups?: string;
}

class RoleMappingBody {
  @ApiProperty({ example: 'platform-admins' }) @IsString() @MaxLength(200) group!: string;
  @ApiProperty({ enum: ROLES }) @IsIn(ROLES) role!: Role;
}

export class SamlSettingsRequest {
  @ApiPropertyOptional({ description: 'The IdP entity id (or give idpMetadataXml)' })
  @Optional()
  @IsString()
  @MaxLength(1024)
  idpEntityId?: string;
  @ApiPropertyOptional({ description: 'The IdP SSO URL, HTTP-Redirect binding; https' })
  @Optional()
  @IsString()
  @MaxLength(2048)
  idpSsoUrl?: string;
  @ApiPropertyOptional({ type: [String], description: 'PEM signing certificates; two during a rotation' })
  @Optional()
  @IsArray()
  @ArrayMaxSize(2)
  @IsString({ each: true })
  @MaxLength(20000, { each: true })
  idpCertificates?: string[];
  @ApiPropertyOptional({ description: 'IdP metadata XML to take the entity id, SSO URL and certificates from' })
  @Optional()
  @IsString()
  @MaxLength(200_000)
  idpMetadataXml?: string;
  @ApiPropertyOptional({ type: AttributeNames }) @IsOptional() @ValidateNested() @Type(() => AttributeNames) attributes?: AttributeNames;
  @ApiPropertyOptional({ type: [RoleMappingBody], description: 'Ordered: the first group the user has gives the role' })
  @Optional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => RoleMappingBody)
  roleMappings?: RoleMappingBody[];
  @ApiPropertyOptional({ enum: ROLES, default: 'viewer' }) @IsOptional() @IsIn(ROLES) defaultRole?: Role;
  @ApiPropertyOptional({ default: false, description: 'Also require the whole response to be signed (the assertion always is)' })
  @Optional()
  @IsBoolean()
  wantResponseSigned?: boolean;
  @ApiPropertyOptional({ type: [String], description: 'URL prefixes the login may send the browser back to' })
  @Optional()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  allowedRedirects?: string[];
  @ApiPropertyOptional({ default: true }) @IsOptional() @IsBoolean() enabled?: boolean;
  @ApiPropertyOptional({ default: false, description: 'Refuse password login to everyone but admins' })
  @Optional()
  @IsBoolean()
  enforced?: boolean;
}

class ServiceProviderResponse {
  @ApiProperty() entityId!: string;
  @ApiProperty() acsUrl!: string;
  @ApiProperty() metadataUrl!: string;
  @ApiProperty() loginUrl!: string;
}

export class SamlSettingsResponse {
  @ApiProperty() idpEntityId!: string;
  @ApiProperty() idpSsoUrl!: string;
  @ApiProperty({ type: [String] }) idpCertificates!: string[];
  @ApiProperty({ type: AttributeNames }) attributes!: SamlSettings['attributes'];
  @ApiProperty({ type: [RoleMappingBody] }) roleMappings!: RoleMappingBody[];
  @ApiProperty({ enum: ROLES }) defaultRole!: Role;
  @ApiProperty() wantResponseSigned!: boolean;
  @ApiProperty({ type: [String] }) allowedRedirects!: string[];
  @ApiProperty() enabled!: boolean;
  @ApiProperty() enforced!: boolean;
  @ApiProperty({ type: ServiceProviderResponse, description: 'What to configure at the IdP' }) sp!: ServiceProvider;
}

export class ExchangeCodeRequest {
  @ApiProperty() @IsString() @MaxLength(200) code!: string;
}

@ApiTags('auth')
@Controller('api/auth/saml')
export class SamlController {
  constructor(
    private readonly saml: SamlService,
    private readonly auth: AuthService,
  ) {}

  @Get()
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({ summary: "The organization's SAML settings (enterprise tier)" })
  @ApiOkResponse({ type: SamlSettingsResponse })
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal): Promise<SamlSettingsResponse> {
    const { settings, organization } = await this.saml.settings(caller);
    return { ...settings, sp: this.saml.serviceProvider(organization.slug) };
  }

  @Put()
  @ApiBearerAuth()
  @Roles('admin')
  @ApiOperation({ summary: 'Set up SAML sign-in for the organization (enterprise tier); checked before it is saved' })
  @ApiOkResponse({ type: SamlSettingsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async put(@CurrentPrincipal() caller: Principal, @Body() body: SamlSettingsRequest): Promise<SamlSettingsResponse> {
    const { settings, organization } = await this.saml.configure(caller, body);
    return { ...settings, sp: this.saml.serviceProvider(organization.slug) };
  }

  @Delete()
  @ApiBearerAuth()
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove SAML sign-in; users keep their accounts' })
  @ApiNoContentResponse()
  @ApiErrors('FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'NOT_FOUND')
  async remove(@CurrentPrincipal() caller: Principal): Promise<void> {
    await this.saml.remove(caller);
  }

  @Post('exchange')
  @Public()
  @UseGuards(SamlRateGuard)
  @HttpCode(200)
  @ApiOperation({ summary: 'Trade the one-time code from the sign-in redirect (60 s, once) for a token pair' })
  @ApiOkResponse({ type: TokenPairResponse })
  @ApiPublicErrors('VALIDATION_FAILED', 'SAML_INVALID')
  async exchange(@Body() body: ExchangeCodeRequest): Promise<TokenPairResponse> {
    return this.auth.issue(await this.saml.exchange(body.code));
  }

  @Get(':org/metadata')
  @Public()
  @ApiOperation({ summary: "The service provider's metadata for the organization's IdP" })
  @ApiOkResponse({ description: 'SAML metadata XML (application/samlmetadata+xml)' })
  @ApiPublicErrors('NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async metadata(@Param('org') org: string, @Res() res: Response): Promise<void> {
    const xml = await this.saml.metadata(slug(org));
    res.type('application/samlmetadata+xml; charset=utf-8').send(xml);
  }

  @Get(':org/login')
  @Public()
  @UseGuards(SamlRateGuard)
  @ApiOperation({ summary: 'Start a sign-in: 302 to the IdP with an AuthnRequest; `redirect` must be an allowed URL' })
  @ApiFoundResponse({ description: 'To the IdP' })
  @ApiPublicErrors('VALIDATION_FAILED', 'NOT_FOUND', 'FEATURE_NOT_AVAILABLE')
  async login(@Param('org') org: string, @Query('redirect') redirect: string | undefined, @Res() res: Response): Promise<void> {
    res.redirect(302, await this.saml.loginUrl(slug(org), typeof redirect === 'string' ? redirect : undefined));
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
    const user = req.user;
    const relayState = (req.body as { RelayState?: unknown }).RelayState;
    const { settings } = await this.saml.options(slug(org));
    const wantsJson = req.accepts(['html', 'json']) === 'json';
    if (!wantsJson && typeof relayState === 'string' && relayState) {
      // A browser goes back only where the settings allow, with a code, never the tokens.
      if (!isAllowedRedirect(settings, relayState)) {
        throw new DomainError('VALIDATION_FAILED', 'The RelayState is not one of the allowed redirects', [
          { path: 'RelayState', message: 'RelayState must start with one of the allowedRedirects of the SAML settings' },
        ]);
      }
      const target = new URL(relayState);
      target.searchParams.set('code', await this.saml.issueCode(user));
      return res.redirect(302, target.toString());
    }
    res.status(200).json(await this.auth.issue(user));
  }
}

/** Slugs are checked like ids: anything else cannot name an organization. */
function slug(value: string): string {
  return SLUG.test(value) ? value : '-';
}
