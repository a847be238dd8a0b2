import { ApiProperty } from '@nestjs/swagger';
import { Tier, TIERS } from '../licensing/domain/tiers';
import { Organization } from './domain/organization';

/**
 * The organization as the API shows it: the organizations module's published representation,
 * which other modules' APIs embed (auth's /me) instead of reaching into this module's api/.
 */
export class OrganizationResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() slug!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: TIERS }) tier!: Tier;
  @ApiProperty({ type: Number, nullable: true, description: 'Enterprise only: the configured requests per minute' })
  rateLimitPerMinute!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Users the organization may have; null: only the license limits it' })
  seatQuota!: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: "Days its executions and runs are kept; null: its tier's default (starter 7, team 30, enterprise 90). HISTORY_RETENTION_DAYS caps both",
  })
  historyRetentionDays!: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt!: string;

  static from(o: Organization): OrganizationResponse {
    return {
      id: o.id,
      slug: o.slug,
      name: o.name,
      tier: o.tier,
      rateLimitPerMinute: o.rateLimitPerMinute,
      seatQuota: o.seatQuota,
      historyRetentionDays: o.historyRetentionDays,
      createdAt: o.createdAt.toISOString(),
    };
  }
}
