import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ROLES, type Role } from '../../../shared/auth/principal';
import { Optional } from '../../../shared/http/optional.decorator';
import { ConfiguredSaml } from '../application/saml-settings.service';
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
  @ApiProperty({ type: ServiceProviderResponse, description: 'What to configure at the IdP' }) sp!: ServiceProviderResponse;

  static from({ settings, serviceProvider }: ConfiguredSaml): SamlSettingsResponse {
    return { ...settings, sp: serviceProvider };
  }
}

export class ExchangeCodeRequest {
  @ApiProperty() @IsString() @MaxLength(200) code!: string;
}
