import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { Role, ROLES } from '../../../shared/auth/principal';
import { Scope, SCOPES } from '../../../shared/auth/scopes';
import { Optional, OptionalOrNull } from '../../../shared/http/optional.decorator';
import { IssuedKey } from '../application/api-keys.service';
import { ApiKey, DEFAULT_LIFETIME_DAYS, MAX_GRACE_SECONDS } from '../domain/api-key';
import { KeyEvent } from '../domain/api-key.repository';
import { KEY_PATTERN } from '../domain/key-secret';
import { ServiceAccount } from '../domain/service-account';

const NAME_LENGTH = 100;

export class CreateServiceAccountRequest {
  @ApiProperty({ maxLength: NAME_LENGTH, example: 'nightly-export' })
  @IsString()
  @MinLength(1)
  @MaxLength(NAME_LENGTH)
  name!: string;

  @ApiProperty({ enum: ROLES, description: 'What its keys may do at most' })
  @IsIn(ROLES)
  role!: Role;
}

export class UpdateServiceAccountRequest {
  @ApiPropertyOptional({ maxLength: NAME_LENGTH })
  @Optional()
  @IsString()
  @MinLength(1)
  @MaxLength(NAME_LENGTH)
  name?: string;

  @ApiPropertyOptional({ enum: ROLES })
  @Optional()
  @IsIn(ROLES)
  role?: Role;

  @ApiPropertyOptional({ description: 'A disabled account keeps its keys, and every one of them is refused' })
  @Optional()
  @IsBoolean()
  disabled?: boolean;
}

export class ServiceAccountResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: ROLES }) role!: Role;
  @ApiProperty() disabled!: boolean;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;

  static of(account: ServiceAccount): ServiceAccountResponse {
    const { id, name, role, disabled, createdAt, updatedAt } = account.toProps();
    return { id, name, role, disabled, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() };
  }
}

export class ServiceAccountPageResponse {
  @ApiProperty({ type: [ServiceAccountResponse] }) data!: ServiceAccountResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class CreateApiKeyRequest {
  @ApiProperty({ maxLength: NAME_LENGTH, example: 'ci-deploy' })
  @IsString()
  @MinLength(1)
  @MaxLength(NAME_LENGTH)
  name!: string;

  @ApiPropertyOptional({
    enum: SCOPES,
    isArray: true,
    description: 'Narrows what the key may do below its holder role; left out, the key may do what the role allows',
  })
  @Optional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(SCOPES.length)
  @IsIn(SCOPES, { each: true })
  scopes?: Scope[];

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    format: 'date-time',
    description: `When the key stops working; left out, in ${DEFAULT_LIFETIME_DAYS} days (or the organization's cap); null: never (enterprise tier, no cap set)`,
  })
  @OptionalOrNull()
  @IsISO8601({ strict: true })
  expiresAt?: string | null;
}

export class RotateApiKeyRequest {
  @ApiPropertyOptional({ minimum: 0, maximum: MAX_GRACE_SECONDS, default: 0, description: 'How long the previous key keeps working' })
  @Optional()
  @IsInt()
  @Min(0)
  @Max(MAX_GRACE_SECONDS)
  graceSeconds?: number;
}

class KeyOwnerResponse {
  @ApiProperty({ enum: ['service_account', 'user'] }) type!: string;
  @ApiProperty({ format: 'uuid' }) id!: string;
}

/** A key as lists show it: never its secret. */
export class ApiKeyResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ example: 'plat_sa_4fTq', description: 'The first characters of the key, to recognise it' }) prefix!: string;
  @ApiProperty({ enum: SCOPES, isArray: true, nullable: true, description: 'null: everything the holder role allows' })
  scopes!: Scope[] | null;
  @ApiProperty({ type: KeyOwnerResponse }) owner!: KeyOwnerResponse;
  @ApiProperty() createdAt!: string;
  @ApiProperty({ type: String, nullable: true }) expiresAt!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Updated at most once a minute' }) lastUsedAt!: string | null;

  static of(key: ApiKey): ApiKeyResponse {
    const p = key.toProps();
    return {
      id: p.id,
      name: p.name,
      prefix: p.displayPrefix,
      scopes: p.scopes,
      owner: { ...p.owner },
      createdAt: p.createdAt.toISOString(),
      expiresAt: p.expiresAt?.toISOString() ?? null,
      lastUsedAt: p.lastUsedAt?.toISOString() ?? null,
    };
  }
}

export class IssuedApiKeyResponse extends ApiKeyResponse {
  @ApiProperty({ pattern: KEY_PATTERN.source, description: 'The key; shown this once. Send it as `Authorization: Bearer <key>`' })
  key!: string;

  static from(issued: IssuedKey): IssuedApiKeyResponse {
    return { ...ApiKeyResponse.of(issued.key), key: issued.secret };
  }
}

export class ApiKeyPageResponse {
  @ApiProperty({ type: [ApiKeyResponse] }) data!: ApiKeyResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

class KeyActorResponse {
  @ApiProperty({ enum: ['user', 'api_key'] }) type!: string;
  @ApiProperty({ format: 'uuid' }) id!: string;
}

export class KeyEventResponse {
  @ApiProperty({ enum: ['created', 'rotated', 'revoked'] }) type!: string;
  @ApiProperty({ type: KeyActorResponse }) actor!: KeyActorResponse;
  @ApiProperty() at!: string;

  static of(event: KeyEvent): KeyEventResponse {
    return { type: event.type, actor: { ...event.actor }, at: event.at.toISOString() };
  }
}

export class KeyEventListResponse {
  @ApiProperty({ type: [KeyEventResponse], description: 'Oldest first' }) data!: KeyEventResponse[];
}

export class KeyPolicyRequest {
  @ApiProperty({
    type: Number,
    nullable: true,
    minimum: 1,
    maximum: 3650,
    description: 'The longest lifetime of a new key, in days; null: no cap',
  })
  @ValidateIf((_o, value) => value !== null)
  @IsInt()
  @Min(1)
  @Max(3650)
  maxLifetimeDays!: number | null;
}

export class KeyPolicyResponse {
  @ApiProperty({ type: Number, nullable: true }) maxLifetimeDays!: number | null;
}
