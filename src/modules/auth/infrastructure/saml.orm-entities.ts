import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/** An organization's SAML settings (one row per organization). */
@Entity('saml_settings')
export class SamlSettingsRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('jsonb') settings!: Record<string, unknown>;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/**
 * AuthnRequest ids sent to an IdP and not yet answered: an answer must carry one
 * (InResponseTo), and using it removes it, so a replayed response fails on every instance.
 */
@Entity('saml_requests')
@Index('saml_requests_expires_idx', ['expiresAt'])
export class SamlRequestRow {
  @PrimaryColumn('varchar', { length: 128 }) id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
  @Column('timestamp with time zone', { name: 'used_at', precision: 3, nullable: true }) usedAt!: Date | null;
}

/** One-time codes a browser sign-in hands to the client, exchanged once for a token pair. */
@Entity('saml_login_codes')
@Index('saml_login_codes_expires_idx', ['expiresAt'])
export class SamlLoginCodeRow {
  @PrimaryColumn('char', { name: 'code_hash', length: 64 }) codeHash!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}
