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

@Entity('workflow_runs')
// Run history: newest first per workflow, keyset on (created_at, id).
@Index('workflow_runs_workflow_created_idx', ['workflowId', 'createdAt', 'id'])
@Index('workflow_runs_unfinished_idx', ['createdAt'], { where: `status IN ('queued', 'running')` })
export class RunRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @ManyToOne(() => WorkflowRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'workflow_id' }) workflow?: WorkflowRow;
  @Column('integer', { name: 'workflow_version' }) workflowVersion!: number;
  @Column('varchar', { length: 16 }) status!: string;
  @Column('jsonb', { nullable: true }) input!: unknown;
  @Column('jsonb', { nullable: true }) output!: unknown;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('integer', { default: 0 }) attempts!: number;
  @Column('uuid', { name: 'job_id', nullable: true }) jobId!: string | null;
  /** The run's bound, from its version, kept for the queue's lease. */
  @Column('integer', { name: 'timeout_ms' }) timeoutMs!: number;
  @Column('jsonb', { name: 'triggered_by' }) triggeredBy!: { type: string; id: string };
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3, nullable: true }) startedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}

@Entity('workflow_run_steps')
export class RunStepRow {
  @PrimaryColumn('uuid', { name: 'run_id' }) runId!: string;
  @ManyToOne(() => RunRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'run_id' }) run?: RunRow;
  @PrimaryColumn('varchar', { name: 'step_id', length: 64 }) stepId!: string;
  /** Order in the definition. */
  @Column('integer') position!: number;
  @Column('varchar', { length: 16 }) status!: string;
  @Column('integer', { default: 0 }) attempts!: number;
  @Column('jsonb', { nullable: true }) input!: unknown;
  @Column('jsonb', { nullable: true }) output!: unknown;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('uuid', { name: 'execution_id', nullable: true }) executionId!: string | null;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3, nullable: true }) startedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}
