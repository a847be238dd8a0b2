import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsNotEmpty, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ROLES, type Role } from '../../../shared/auth/principal';
import { Optional } from '../../../shared/http/optional.decorator';
import { ConfiguredOidc } from '../application/oidc-settings.service';
import { DEFAULT_SCOPES } from '../domain/oidc-settings';

class ClaimNames {
  @ApiPropertyOptional({ default: 'email' }) @Optional() @IsString() @MaxLength(200) email?: string;
  @ApiPropertyOptional({ default: 'name', description: 'given_name and family_name are used when the provider sends them' })
  @Optional()
  @IsString()
  @MaxLength(200)
  name?: string;
  @ApiPropertyOptional({ default: 'groups' }) @Optional() @IsString() @MaxLength(200) groups?: string;
}

class OidcRoleMappingBody {
  @ApiProperty({ example: 'platform-admins', description: 'A value of the groups claim' }) @IsString() @MaxLength(200) value!: string;
  @ApiProperty({ enum: ROLES }) @IsIn(ROLES) role!: Role;
}

export class OidcSettingsRequest {
  @ApiProperty({
    description: 'The issuer identifier; https (http only for hosts in OUTBOUND_ALLOWLIST). Its discovery document is fetched to check it',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(2048)
  issuer!: string;
  @ApiProperty({ description: 'The client id the provider registered for this organization' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(512)
  clientId!: string;
  @ApiPropertyOptional({
    description: 'Write-only: never returned. Required the first time; left out, the stored one is kept',
    writeOnly: true,
  })
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(2048)
  clientSecret?: string;
  @ApiPropertyOptional({ default: DEFAULT_SCOPES, description: 'Space-separated; must include openid' })
  @Optional()
  @IsString()
  @MaxLength(1000)
  scopes?: string;
  @ApiPropertyOptional({ type: ClaimNames }) @Optional() @ValidateNested() @Type(() => ClaimNames) claims?: ClaimNames;
  @ApiPropertyOptional({ type: [OidcRoleMappingBody], description: 'Ordered: the first value the groups claim holds gives the role' })
  @Optional()
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => OidcRoleMappingBody)
  roleMappings?: OidcRoleMappingBody[];
  @ApiPropertyOptional({ enum: ROLES, default: 'viewer' }) @Optional() @IsIn(ROLES) defaultRole?: Role;
  @ApiPropertyOptional({ type: [String], description: 'URL prefixes the login may send the browser back to' })
  @Optional()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(2048, { each: true })
  allowedRedirects?: string[];
  @ApiPropertyOptional({
    default: false,
    description:
      'Accept an email the provider does not say is verified (`email_verified` missing or false), for a provider that never sends the ' +
      'claim. Off, such a sign-in is 401 OIDC_EMAIL_NOT_VERIFIED: a first sign-in links to the existing user with its email',
  })
  @Optional()
  @IsBoolean()
  allowUnverifiedEmail?: boolean;
  @ApiPropertyOptional({ default: true }) @Optional() @IsBoolean() enabled?: boolean;
}

class OidcClientResponse {
  @ApiProperty({ description: 'The redirect URI to register at the provider' }) redirectUri!: string;
  @ApiProperty({ description: 'Where a browser starts a sign-in' }) loginUrl!: string;
}

export class OidcSettingsResponse {
  @ApiProperty() issuer!: string;
  @ApiProperty() clientId!: string;
  @ApiProperty({ enum: [true], description: 'The client secret is stored (sealed); it is never returned' }) clientSecretSet!: true;
  @ApiProperty() scopes!: string;
  @ApiProperty({ type: ClaimNames }) claims!: ConfiguredOidc['settings']['claims'];
  @ApiProperty({ type: [OidcRoleMappingBody] }) roleMappings!: OidcRoleMappingBody[];
  @ApiProperty({ enum: ROLES }) defaultRole!: Role;
  @ApiProperty({ type: [String] }) allowedRedirects!: string[];
  @ApiProperty({ description: 'Whether an email the provider does not say is verified may sign in' }) allowUnverifiedEmail!: boolean;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: OidcClientResponse, description: 'What to register at the provider' }) client!: OidcClientResponse;

  static from({ settings, clientSecretSet, client }: ConfiguredOidc): OidcSettingsResponse {
    return { ...settings, clientSecretSet, client };
  }
}
