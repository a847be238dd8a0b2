import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('workflows')
@Index('workflows_org_created_idx', ['organizationId', 'createdAt', 'id'])
export class WorkflowRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('varchar', { length: 200 }) name!: string;
  /** The current version. */
  @Column('integer') version!: number;
  @Column('uuid', { name: 'created_by' }) createdBy!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
  /** Deleted workflows are gone from every route but their runs. */
  @Column('timestamp with time zone', { name: 'deleted_at', precision: 3, nullable: true }) deletedAt!: Date | null;
}

@Entity('workflow_versions')
@Index('workflow_versions_workflow_version_key', ['workflowId', 'version'], { unique: true })
@Index('workflow_versions_workflow_created_idx', ['workflowId', 'createdAt', 'id'])
export class WorkflowVersionRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @ManyToOne(() => WorkflowRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'workflow_id' }) workflow?: WorkflowRow;
  @Column('integer') version!: number;
  @Column('jsonb') definition!: Record<string, unknown>;
  @Column('uuid', { name: 'created_by' }) createdBy!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
}
