import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('plugin_installations')
@Index('plugin_installations_org_slug_key', ['organizationId', 'slug'], { unique: true })
@Index('plugin_installations_org_created_idx', ['organizationId', 'createdAt', 'id'])
export class InstallationRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 64 }) slug!: string;
  @Column('varchar', { length: 32 }) version!: string;
  /** Non-secret fields only. */
  @Column('jsonb') config!: Record<string, unknown>;
  /** Secret fields as one AES-256-GCM sealed JSON object, or null when there are none. */
  @Column('text', { name: 'sealed_secrets', nullable: true }) sealedSecrets!: string | null;
  @Column('uuid', { name: 'installed_by' }) installedBy!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}
