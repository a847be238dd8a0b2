import { Body, Controller, Delete, Get, HttpCode, Put } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { CurrentPrincipal, OperatorOnly, RequiresScope, RolesOrOperator, SessionOnly } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { TIERS, Tier } from '../domain/tiers';
import { LicensingService } from '../application/licensing.service';
import { LICENSE_KEY_SOURCES, LicenseKeySource, LicenseState, LicenseStatus } from '../domain/license';
import { TRIAL_TIER, TrialPeriod } from '../domain/trial';

export class InstallLicenseRequest {
  @ApiProperty({ description: 'The license key: a compact JWS signed with Ed25519 by the vendor' })
  @IsString()
  @MinLength(20)
  @MaxLength(16384)
  key!: string;
}

export class TrialResponse {
  @ApiProperty({ description: 'Whether the trial is in force now; false once its 30 days are over' }) active!: boolean;
  @ApiProperty({ enum: TIERS, description: 'The tier every organization has while the trial lasts' }) tier!: Tier;
  @ApiProperty({ description: "The installation's first start with TRIAL=true" }) startedAt!: string;
  @ApiProperty({ description: 'When the trial ends (ended): then organizations have what the license allows' }) endsAt!: string;
  @ApiProperty({ type: 'integer', description: 'Whole days left, a started day counting as one; 0 once it ended' }) daysLeft!: number;

  static of(trial: TrialPeriod): TrialResponse {
    return {
      active: trial.active,
      tier: TRIAL_TIER,
      startedAt: trial.startedAt.toISOString(),
      endsAt: trial.endsAt.toISOString(),
      daysLeft: trial.daysLeft,
    };
  }
}

export class LicenseResponse {
  @ApiProperty({ enum: ['none', 'valid', 'expired'] }) status!: LicenseStatus;
  @ApiPropertyOptional({ description: 'The customer (sub)' }) customer?: string;
  @ApiPropertyOptional({ enum: TIERS, description: 'The highest tier organizations may have' }) tier?: Tier;
  @ApiPropertyOptional() seats?: number;
  @ApiPropertyOptional({ type: [String] }) features?: string[];
  @ApiPropertyOptional() maxRateLimitPerMinute?: number;
  @ApiPropertyOptional() issuedAt?: string;
  @ApiPropertyOptional() expiresAt?: string;
  @ApiPropertyOptional() installedAt?: string;
  @ApiPropertyOptional({
    enum: LICENSE_KEY_SOURCES,
    description:
      "Which key verified the license: one of the vendor's (built in), or one added with LICENSE_PUBLIC_KEYS for development, " +
      'tests and benchmarks (then also a warning)',
  })
  verifiedBy?: LicenseKeySource;
  @ApiPropertyOptional({
    type: TrialResponse,
    description: 'With TRIAL=true only: the trial, in force or ended (a warning says which)',
  })
  trial?: TrialResponse;
  @ApiProperty({ type: [String] }) warnings!: string[];

  static of(state: LicenseState): LicenseResponse {
    const trial = state.trial ? { trial: TrialResponse.of(state.trial) } : {};
    const license = state.license;
    if (!license) return { status: state.status, ...trial, warnings: state.warnings() };
    const { claims } = license;
    return {
      status: state.status,
      customer: claims.sub,
      tier: claims.tier,
      seats: claims.seats,
      features: claims.features,
      maxRateLimitPerMinute: claims.maxRateLimitPerMinute,
      issuedAt: new Date(claims.iat * 1000).toISOString(),
      expiresAt: new Date(claims.exp * 1000).toISOString(),
      installedAt: license.installedAt.toISOString(),
      verifiedBy: license.verifiedBy,
      ...trial,
      warnings: state.warnings(),
    };
  }
}

@ApiTags('license')
@ApiBearerAuth()
@Controller('api/license')
export class LicenseController {
  constructor(private readonly licensing: LicensingService) {}

  @Get()
  @RequiresScope('organization:read')
  @RolesOrOperator('admin')
  @ApiOperation({ summary: "The installation's license (instance operators and admins)" })
  @ApiOkResponse({ type: LicenseResponse })
  @ApiErrors('FORBIDDEN')
  async get(): Promise<LicenseResponse> {
    return LicenseResponse.of(await this.licensing.state());
  }

  @Put()
  @SessionOnly()
  @OperatorOnly()
  @ApiOperation({ summary: 'Install a license key, verified offline (instance operators)' })
  @ApiOkResponse({ type: LicenseResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'LICENSE_INVALID')
  async install(@CurrentPrincipal() caller: Principal, @Body() body: InstallLicenseRequest): Promise<LicenseResponse> {
    await this.licensing.install(body.key, caller);
    return LicenseResponse.of(await this.licensing.state());
  }

  @Delete()
  @SessionOnly()
  @OperatorOnly()
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove the license: every organization falls back to starter (instance operators)' })
  @ApiNoContentResponse()
  @ApiErrors('FORBIDDEN', 'LICENSE_INVALID')
  async remove(): Promise<void> {
    await this.licensing.remove();
  }
}
