import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/** An organization's OpenID Connect settings (one row per organization); the client secret sealed beside them. */
@Entity('oidc_settings')
export class OidcSettingsRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('jsonb') settings!: Record<string, unknown>;
  /** AES-256-GCM (SecretBox), bound to the organization. */
  @Column('text', { name: 'sealed_client_secret' }) sealedClientSecret!: string;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/**
 * Sign-ins sent to the provider and not yet answered: the callback's state must name one, of
 * its organization, unused and unexpired; using it marks it, so a replayed callback fails on
 * every instance.
 */
@Entity('oidc_logins')
@Index('oidc_logins_expires_idx', ['expiresAt'])
export class OidcLoginRow {
  @PrimaryColumn('char', { name: 'state_hash', length: 64 }) stateHash!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('varchar', { length: 128 }) nonce!: string;
  @Column('varchar', { name: 'code_verifier', length: 128 }) codeVerifier!: string;
  @Column('text', { nullable: true }) redirect!: string | null;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
  @Column('timestamp with time zone', { name: 'used_at', precision: 3, nullable: true }) usedAt!: Date | null;
}

/**
 * Who a user is at the organization's provider: its issuer and subject (the ID token's `iss`
 * and `sub`), recorded at the first sign-in that linked them by email. Later sign-ins find the
 * user by these, not by the email (a changed email at the provider does not move the account);
 * a user is linked to one subject per issuer.
 */
@Entity('oidc_identities')
@Index('oidc_identities_user_issuer_key', ['organizationId', 'issuer', 'userId'], { unique: true })
@Index('oidc_identities_user_idx', ['userId'])
export class OidcIdentityRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @PrimaryColumn('varchar', { length: 2048 }) issuer!: string;
  @PrimaryColumn('varchar', { length: 255 }) subject!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @ManyToOne('UserRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'user_id' }) user?: object;
  @Column('timestamp with time zone', { name: 'linked_at', precision: 3, default: () => 'now()' }) linkedAt!: Date;
}
