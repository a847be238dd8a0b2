import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('agents')
@Index('agents_org_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('agents_org_plugin_idx', ['organizationId', 'pluginSlug'])
export class AgentRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 200 }) name!: string;
  @Column('text') description!: string;
  /** `<plugin>.<kind>`; the plugin part is kept apart for the in-use check on uninstall. */
  @Column('varchar', { length: 130 }) kind!: string;
  @Column('varchar', { name: 'plugin_slug', length: 64 }) pluginSlug!: string;
  @Column('jsonb') config!: Record<string, unknown>;
  @Column('jsonb', { name: 'input_schema', nullable: true }) inputSchema!: Record<string, unknown> | null;
  @Column('jsonb', { nullable: true }) mcp!: { expose: boolean; description?: string } | null;
  @Column('integer', { name: 'timeout_ms' }) timeoutMs!: number;
  @Column('integer', { name: 'max_attempts' }) maxAttempts!: number;
  @Column('uuid', { name: 'created_by' }) createdBy!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}
