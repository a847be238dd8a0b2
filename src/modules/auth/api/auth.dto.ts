import { ApiProperty } from '@nestjs/swagger';
import { IsEmail, IsString, MaxLength, MinLength } from 'class-validator';
import { Tier, TIERS } from '../../licensing/domain/tiers';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationResponse } from '../../organizations/organization.response';
import { User } from '../../users/domain/user';
import { UserResponse } from '../../users/user.response';

export class LoginRequest {
  @ApiProperty({ example: 'admin@platform.local' })
  @IsEmail({ require_tld: false })
  @MaxLength(320)
  email!: string;

  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  password!: string;
}

export class RefreshRequest {
  @ApiProperty({ description: 'The refresh token of the last login or refresh' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  refreshToken!: string;
}

export class ChangePasswordRequest {
  @ApiProperty()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  currentPassword!: string;

  @ApiProperty({ minLength: 12, maxLength: 200 })
  @IsString()
  @MinLength(12)
  @MaxLength(200)
  newPassword!: string;
}

export class TokenPairResponse {
  @ApiProperty({ description: 'JWT (HS256), sent as `Authorization: Bearer <accessToken>`' }) accessToken!: string;
  @ApiProperty({ enum: ['Bearer'] }) tokenType!: 'Bearer';
  @ApiProperty({ description: 'Seconds until the access token expires', example: 900 }) expiresIn!: number;
  @ApiProperty({ description: 'Opaque; single use, exchanged at /api/auth/refresh for a new pair' }) refreshToken!: string;
}

export class MeResponse {
  @ApiProperty({ type: UserResponse }) user!: UserResponse;
  @ApiProperty({ type: OrganizationResponse }) organization!: OrganizationResponse;
  @ApiProperty({ enum: TIERS }) tier!: Tier;

  static from({ user, organization }: { user: User; organization: Organization }): MeResponse {
    return { user: UserResponse.from(user), organization: OrganizationResponse.from(organization), tier: organization.tier };
  }
}
