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

/**
 * One-time codes a browser sign-in (SAML or OIDC, `via`) hands to the client, exchanged once
 * for a token pair at that method's exchange route.
 */
@Entity('saml_login_codes')
@Index('saml_login_codes_expires_idx', ['expiresAt'])
export class SamlLoginCodeRow {
  @PrimaryColumn('char', { name: 'code_hash', length: 64 }) codeHash!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  /** How the user signed in: the code is exchanged only at that method's route. */
  @Column('varchar', { length: 8, default: 'saml' }) via!: 'saml' | 'oidc' | 'password';
  /** The session the exchange starts (a SAML session, for single logout); null for codes made before it was recorded. */
  @Column('uuid', { name: 'family_id', nullable: true }) familyId!: string | null;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}

/**
 * An organization's SP key pairs (signing and encryption): the current one (retire_at null; at
 * most one per organization) and rotated-out ones, which decrypt and stay in the metadata until
 * retire_at. The private key is sealed with SECRETS_KEY.
 */
@Entity('saml_sp_keys')
@Index('saml_sp_keys_current_key', ['organizationId'], { unique: true, where: 'retire_at IS NULL' })
@Index('saml_sp_keys_organization_idx', ['organizationId', 'createdAt'])
export class SamlSpKeyRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('text') certificate!: string;
  @Column('text', { name: 'private_key' }) privateKey!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'retire_at', precision: 3, nullable: true }) retireAt!: Date | null;
}

/** Sessions that began with a SAML sign-in (one per refresh-token family), by the NameID and SessionIndex the IdP logs them out with. */
@Entity('saml_sessions')
@Index('saml_sessions_name_idx', ['organizationId', 'nameId'])
@Index('saml_sessions_user_idx', ['userId'])
@Index('saml_sessions_expires_idx', ['expiresAt'])
export class SamlSessionRow {
  @PrimaryColumn('uuid', { name: 'family_id' }) familyId!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @ManyToOne('UserRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'user_id' }) user?: object;
  @Column('varchar', { name: 'name_id', length: 1024 }) nameId!: string;
  @Column('varchar', { name: 'name_id_format', length: 256, nullable: true }) nameIdFormat!: string | null;
  @Column('varchar', { name: 'session_index', length: 256, nullable: true }) sessionIndex!: string | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}

/** The assertion IDs of accepted IdP-initiated sign-ins, until the assertion expires: each is accepted once, on any instance. */
@Entity('saml_assertions')
@Index('saml_assertions_expires_idx', ['expiresAt'])
export class SamlAssertionRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @PrimaryColumn('varchar', { length: 256 }) id!: string;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}
