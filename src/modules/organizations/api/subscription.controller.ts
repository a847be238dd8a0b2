import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { OrganizationsService } from '../application/organizations.service';
import { Subscription, SubscriptionService } from '../application/subscription.service';
import { LICENSE_KEY_SOURCES, LicenseKeySource } from '../../licensing/domain/license';
import { TIERS, Tier } from '../../licensing/domain/tiers';

export class UpdateSubscriptionRequest {
  @ApiProperty({ minimum: 1, description: "Requests per minute for the organization, up to the license's maximum" })
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  rateLimitPerMinute!: number;
}

class RateLimitResponse {
  @ApiProperty({ enum: TIERS }) tier!: Tier;
  @ApiProperty() limit!: number;
  @ApiProperty() windowSeconds!: number;
}

class OrganizationSeatsResponse {
  @ApiProperty({ description: "The organization's users" }) used!: number;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: "The organization's seat quota, set by operators; null: none (the license's seats alone)",
  })
  quota!: number | null;
}

class SeatsResponse {
  @ApiPropertyOptional({ description: 'Users across the installation; shown to admins and instance operators only' }) used?: number;
  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    description: "The license's seats (null: no license, no seat limit); shown to admins and instance operators only",
  })
  allowed?: number | null;
  @ApiProperty({ type: OrganizationSeatsResponse }) organization!: OrganizationSeatsResponse;
}

class LicenseSummaryResponse {
  @ApiProperty({ enum: ['none', 'valid', 'expired'] }) status!: string;
  @ApiProperty({ type: String, nullable: true }) customer!: string | null;
  @ApiProperty({ enum: TIERS, nullable: true }) tier!: Tier | null;
  @ApiProperty({ type: String, nullable: true }) expiresAt!: string | null;
  @ApiProperty({
    enum: LICENSE_KEY_SOURCES,
    nullable: true,
    description: "Which key verified the license: the vendor's, or one from LICENSE_PUBLIC_KEYS (development and tests)",
  })
  verifiedBy!: LicenseKeySource | null;
}

export class SubscriptionResponse {
  @ApiProperty({ format: 'uuid' }) organizationId!: string;
  @ApiProperty({ enum: TIERS, description: 'The tier in force: the assigned one, within the license' }) tier!: Tier;
  @ApiProperty({ enum: TIERS }) assignedTier!: Tier;
  @ApiProperty({ type: RateLimitResponse }) rateLimit!: RateLimitResponse;
  @ApiProperty({ type: [String], example: ['webhooks', 'sso.saml'] }) features!: string[];
  @ApiProperty({ type: SeatsResponse }) seats!: SeatsResponse;
  @ApiProperty({ type: LicenseSummaryResponse }) license!: LicenseSummaryResponse;
  @ApiProperty({ type: [String] }) warnings!: string[];

  static of(s: Subscription): SubscriptionResponse {
    return { ...s, features: [...s.features] };
  }
}

@ApiTags('subscription')
@ApiBearerAuth()
@Controller('api/subscription')
export class SubscriptionController {
  constructor(
    private readonly subscriptions: SubscriptionService,
    private readonly organizations: OrganizationsService,
  ) {}

  @Get()
  @RequiresScope('organization:read')
  @AnyRole()
  @ApiOperation({
    summary: "The organization's tier, rate limit, features, seats and license",
    description: "The installation's seat figures (`seats.used`, `seats.allowed`) are shown to admins and instance operators only.",
  })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors()
  async get(@CurrentPrincipal() caller: Principal): Promise<SubscriptionResponse> {
    return SubscriptionResponse.of(await this.subscriptions.of(caller));
  }

  @Patch()
  @RequiresScope('organization:write')
  @Roles('admin')
  @ApiOperation({ summary: "Enterprise: set the organization's requests per minute, within the license" })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE')
  async update(@CurrentPrincipal() caller: Principal, @Body() body: UpdateSubscriptionRequest): Promise<SubscriptionResponse> {
    await this.organizations.setRateLimit(caller, body.rateLimitPerMinute);
    return SubscriptionResponse.of(await this.subscriptions.of(caller));
  }
}
