import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsDefined,
  IsEmail,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { Tier, TIERS } from '../../licensing/domain/tiers';
import { SLUG_PATTERN } from '../domain/organization';
import { Optional } from '../../../shared/http/optional.decorator';
import { OrganizationResponse } from '../organization.response';

export class OrganizationAdminRequest {
  @ApiProperty({ example: 'admin@acme.example' })
  @IsEmail({ require_tld: false })
  @MaxLength(320)
  email!: string;

  @ApiProperty({ minLength: 12, maxLength: 200 })
  @IsString()
  @MinLength(12)
  @MaxLength(200)
  password!: string;
}

export class CreateOrganizationRequest {
  @ApiProperty({ example: 'acme', pattern: SLUG_PATTERN.source })
  @IsString()
  @Matches(SLUG_PATTERN, { message: 'slug must be lowercase letters, digits and dashes (1-63)' })
  slug!: string;

  @ApiProperty({ example: 'Acme Corp' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name!: string;

  @ApiProperty({ enum: TIERS })
  @IsIn(TIERS)
  tier!: Tier;

  @ApiProperty({ type: OrganizationAdminRequest })
  @IsDefined({ message: 'admin is required' })
  @IsObject({ message: 'admin must be an object with email and password' })
  @ValidateNested()
  @Type(() => OrganizationAdminRequest)
  admin!: OrganizationAdminRequest;
}

export class CreatedOrganizationResponse extends OrganizationResponse {
  @ApiProperty({ format: 'uuid' }) adminUserId!: string;
}

export class OrganizationPageResponse {
  @ApiProperty({ type: [OrganizationResponse] }) data!: OrganizationResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class UpdateOrganizationRequest {
  @ApiPropertyOptional({ maxLength: 200 })
  @Optional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ enum: TIERS, description: 'Up to the tier the license allows' })
  @Optional()
  @IsIn(TIERS)
  tier?: Tier;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    minimum: 1,
    example: 50,
    description: "Users it may have, within the license's seats; null removes the quota",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  seatQuota?: number | null;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    minimum: 1,
    maximum: 3650,
    example: 30,
    description: "Days its executions and runs are kept, up to the instance's HISTORY_RETENTION_DAYS; null returns to the tier's default",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3650)
  historyRetentionDays?: number | null;
}
