import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { ROLES, type Role } from '../../../shared/auth/principal';
import { Optional, OptionalOrNull } from '../../../shared/http/optional.decorator';
import { ConfiguredSaml } from '../application/saml-settings.service';
import { SpKeyView } from '../application/saml-sp-keys.service';
import { SamlSettings } from '../domain/saml-settings';

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
  @ApiPropertyOptional({
    description: "The IdP's single logout URL, HTTP-Redirect binding; https. Without it, no logout messages go to the IdP",
  })
  @OptionalOrNull()
  @IsString()
  @MaxLength(2048)
  idpSloUrl?: string | null;
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
  @ApiPropertyOptional({
    description:
      'A URL to fetch the IdP metadata from (once, now), instead of idpMetadataXml: through the outbound SSRF guard, at most 200 kB, within 10 s',
  })
  @Optional()
  @IsString()
  @MaxLength(2048)
  idpMetadataUrl?: string;
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
  @ApiPropertyOptional({ default: false, description: 'Refuse assertions that are not encrypted to our SP encryption certificate' })
  @Optional()
  @IsBoolean()
  wantAssertionsEncrypted?: boolean;
  @ApiPropertyOptional({
    default: false,
    description: 'Accept IdP-initiated sign-ins (responses to no AuthnRequest of ours); each assertion is accepted once',
  })
  @Optional()
  @IsBoolean()
  allowIdpInitiated?: boolean;
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
  @ApiProperty({ description: 'Single logout (HTTP-Redirect and HTTP-POST bindings)' }) sloUrl!: string;
  @ApiProperty() metadataUrl!: string;
  @ApiProperty() loginUrl!: string;
}

export class SamlSettingsResponse {
  @ApiProperty() idpEntityId!: string;
  @ApiProperty() idpSsoUrl!: string;
  @ApiProperty({ type: String, nullable: true }) idpSloUrl!: string | null;
  @ApiProperty({ type: [String] }) idpCertificates!: string[];
  @ApiProperty({ type: AttributeNames }) attributes!: SamlSettings['attributes'];
  @ApiProperty({ type: [RoleMappingBody] }) roleMappings!: RoleMappingBody[];
  @ApiProperty({ enum: ROLES }) defaultRole!: Role;
  @ApiProperty() wantResponseSigned!: boolean;
  @ApiProperty() wantAssertionsEncrypted!: boolean;
  @ApiProperty() allowIdpInitiated!: boolean;
  @ApiProperty({ type: [String] }) allowedRedirects!: string[];
  @ApiProperty() enabled!: boolean;
  @ApiProperty() enforced!: boolean;
  @ApiProperty({ type: ServiceProviderResponse, description: 'What to configure at the IdP' }) sp!: ServiceProviderResponse;

  static from({ settings, serviceProvider }: ConfiguredSaml): SamlSettingsResponse {
    return { ...settings, sp: serviceProvider };
  }
}

export class ExchangeCodeRequest {
  @ApiProperty() @IsString() @MaxLength(200) code!: string;
}

export class RotateSpKeysRequest {
  @ApiPropertyOptional({
    default: 168,
    minimum: 0,
    maximum: 2160,
    description: 'Hours the previous pair keeps decrypting and stays in the metadata (0: it stops at once)',
  })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(2160)
  overlapHours?: number;
}

export class SpKeyResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ description: 'PEM; the private key is never shown' }) certificate!: string;
  @ApiProperty({ description: 'SHA-256 of the certificate, hex' }) fingerprint!: string;
  @ApiProperty({ description: 'The pair that signs requests now' }) current!: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When a rotated-out pair stops decrypting; null for the current one',
  })
  retireAt!: string | null;
}

export class SpKeysResponse {
  @ApiProperty({ type: [SpKeyResponse], description: 'The pairs in force, the current one first' }) data!: SpKeyResponse[];

  static from(keys: SpKeyView[]): SpKeysResponse {
    return {
      data: keys.map((k) => ({ ...k, createdAt: k.createdAt.toISOString(), retireAt: k.retireAt?.toISOString() ?? null })),
    };
  }
}

export class SamlLogoutRequest {
  @ApiPropertyOptional({
    description: "The session's refresh token: only that session ends; without it, all of the caller's SAML sessions",
  })
  @Optional()
  @IsString()
  @MaxLength(200)
  refreshToken?: string;
}

export class SamlLogoutResponse {
  @ApiProperty() sessionsEnded!: number;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "Send the browser here: the IdP's single logout URL with our signed LogoutRequest (null without an idpSloUrl)",
  })
  logoutUrl!: string | null;
}

export class SloResultResponse {
  @ApiProperty({ enum: ['logged_out'] }) status!: 'logged_out';
  @ApiProperty() sessionsEnded!: number;
}
