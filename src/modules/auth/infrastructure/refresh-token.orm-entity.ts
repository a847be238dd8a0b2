import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('refresh_tokens')
@Index('refresh_tokens_user_idx', ['userId'])
@Index('refresh_tokens_family_idx', ['familyId'])
@Index('refresh_tokens_hash_key', ['tokenHash'], { unique: true })
export class RefreshTokenRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @ManyToOne('UserRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'user_id' }) user?: object;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'family_id' }) familyId!: string;
  @Column('integer', { name: 'credentials_version', default: 0 }) credentialsVersion!: number;
  @Column('char', { name: 'token_hash', length: 64 }) tokenHash!: string;
  @Column('varchar', { length: 8, nullable: true }) via!: 'password' | 'saml' | 'oidc' | null;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
  @Column('timestamp with time zone', { name: 'used_at', precision: 3, nullable: true }) usedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'revoked_at', precision: 3, nullable: true }) revokedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
}
