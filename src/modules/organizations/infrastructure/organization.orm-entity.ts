import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { Tier } from '../../licensing/domain/tiers';

@Entity('organizations')
@Index('organizations_slug_key', ['slug'], { unique: true })
@Index('organizations_created_idx', ['createdAt', 'id'])
export class OrganizationRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('varchar', { length: 63 }) slug!: string;
  @Column('varchar', { length: 200 }) name!: string;
  @Column('varchar', { length: 16 }) tier!: Tier;
  @Column('integer', { name: 'rate_limit_per_minute', nullable: true }) rateLimitPerMinute!: number | null;
  @Column('integer', { name: 'seat_quota', nullable: true }) seatQuota!: number | null;
  /** Days its executions and runs are kept (within HISTORY_RETENTION_DAYS); null: its tier's default. */
  @Column('integer', { name: 'history_retention_days', nullable: true }) historyRetentionDays!: number | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
}
