import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

@Entity('service_accounts')
@Index('service_accounts_org_created_idx', ['organizationId', 'createdAt', 'id'])
export class ServiceAccountRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 100 }) name!: string;
  @Column('varchar', { length: 16 }) role!: 'admin' | 'member' | 'viewer';
  @Column('boolean') disabled!: boolean;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/** A key's secret is kept only as its SHA-256 (`hash`), and the rotated-out one until its grace ends. */
@Entity('api_keys')
@Index('api_keys_owner_created_idx', ['ownerId', 'createdAt', 'id'])
@Index('api_keys_hash_key', ['hash'], { unique: true })
@Index('api_keys_previous_hash_idx', ['previousHash'], { where: 'previous_hash IS NOT NULL' })
export class ApiKeyRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { name: 'owner_type', length: 20 }) ownerType!: 'service_account' | 'user';
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('varchar', { length: 100 }) name!: string;
  @Column('jsonb', { nullable: true }) scopes!: string[] | null;
  @Column('varchar', { name: 'display_prefix', length: 16 }) displayPrefix!: string;
  @Column('char', { length: 64 }) hash!: string;
  @Column('char', { name: 'previous_hash', length: 64, nullable: true }) previousHash!: string | null;
  @Column('timestamp with time zone', { name: 'previous_expires_at', precision: 3, nullable: true }) previousExpiresAt!: Date | null;
  @Column('integer', { name: 'owner_version' }) ownerVersion!: number;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3, nullable: true }) expiresAt!: Date | null;
  @Column('timestamp with time zone', { name: 'last_used_at', precision: 3, nullable: true }) lastUsedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'revoked_at', precision: 3, nullable: true }) revokedAt!: Date | null;
}

/** Who created, rotated and revoked each key, and when. */
@Entity('api_key_events')
@Index('api_key_events_key_idx', ['keyId', 'id'])
export class ApiKeyEventRow {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) id!: string;
  @Column('uuid', { name: 'key_id' }) keyId!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 16 }) type!: 'created' | 'rotated' | 'revoked';
  @Column('jsonb') actor!: { type: 'user' | 'api_key'; id: string };
  @Column('timestamp with time zone', { precision: 3 }) at!: Date;
}

@Entity('api_key_policies')
export class ApiKeyPolicyRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('integer', { name: 'max_lifetime_days', nullable: true }) maxLifetimeDays!: number | null;
}
