import { ON_A_JOB } from '../../../database/durable-table';
import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

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
// GET /api/runs: the organization's runs across workflows.
@Index('workflow_runs_org_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('workflow_runs_unfinished_idx', ['createdAt'], { where: ON_A_JOB })
// A parent's children (a cancel reaches them).
@Index('workflow_runs_parent_idx', ['parentRunId'], { where: 'parent_run_id IS NOT NULL' })
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
  /** The run whose workflow step started this one. */
  @Column('uuid', { name: 'parent_run_id', nullable: true }) parentRunId!: string | null;
  /** 0 for a run started otherwise; its parent's + 1 for a child. */
  @Column('integer', { default: 0 }) depth!: number;
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
  /** When a waiting step goes on (a sleep's end, a retry's next attempt). */
  @Column('timestamp with time zone', { name: 'resume_at', precision: 3, nullable: true }) resumeAt!: Date | null;
  /** Why a skipped step was skipped. */
  @Column('varchar', { length: 500, nullable: true }) reason!: string | null;
  /** The run a workflow step started. */
  @Column('uuid', { name: 'child_run_id', nullable: true }) childRunId!: string | null;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3, nullable: true }) startedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}

/** One item of a map step: its own status, attempts and output, committed as it ends. */
@Entity('workflow_run_items')
export class RunItemRow {
  @PrimaryColumn('uuid', { name: 'run_id', primaryKeyConstraintName: 'PK_workflow_run_items' }) runId!: string;
  @ManyToOne(() => RunRow, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'run_id', foreignKeyConstraintName: 'FK_workflow_run_items_run' })
  run?: RunRow;
  @PrimaryColumn('varchar', { name: 'step_id', length: 64, primaryKeyConstraintName: 'PK_workflow_run_items' }) stepId!: string;
  /** The item's place in the array the map went over. */
  @PrimaryColumn('integer', { primaryKeyConstraintName: 'PK_workflow_run_items' }) index!: number;
  @Column('varchar', { length: 16 }) status!: string;
  @Column('integer', { default: 0 }) attempts!: number;
  @Column('jsonb', { nullable: true }) output!: unknown;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('uuid', { name: 'execution_id', nullable: true }) executionId!: string | null;
  @Column('timestamp with time zone', { name: 'resume_at', precision: 3, nullable: true }) resumeAt!: Date | null;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3, nullable: true }) startedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}

/** A workflow's cron schedule; `next_fire_at` is what workers claim, under FOR UPDATE SKIP LOCKED. */
@Entity('workflow_schedules')
@Index('workflow_schedules_workflow_created_idx', ['workflowId', 'createdAt', 'id'])
@Index('workflow_schedules_due_idx', ['nextFireAt'], { where: 'enabled' })
export class WorkflowScheduleRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @ManyToOne('WorkflowRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'workflow_id' }) workflow?: object;
  @Column('varchar', { length: 200 }) cron!: string;
  @Column('varchar', { length: 100 }) timezone!: string;
  @Column('jsonb', { nullable: true }) input!: unknown;
  @Column('varchar', { length: 8 }) overlap!: 'skip' | 'allow';
  @Column('varchar', { name: 'catch_up', length: 8 }) catchUp!: 'none' | 'latest' | 'all';
  @Column('boolean') enabled!: boolean;
  @Column('timestamp with time zone', { name: 'next_fire_at', precision: 3, nullable: true }) nextFireAt!: Date | null;
  @Column('timestamp with time zone', { name: 'last_fired_at', precision: 3, nullable: true }) lastFiredAt!: Date | null;
  @Column('uuid', { name: 'last_run_id', nullable: true }) lastRunId!: string | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/** What happened at an occurrence of a schedule: a run started, or skipped, missed, failed. */
@Entity('workflow_schedule_occurrences')
@Index('workflow_schedule_occurrences_schedule_idx', ['scheduleId', 'id'])
export class ScheduleOccurrenceRow {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) id!: string;
  @Column('uuid', { name: 'schedule_id' }) scheduleId!: string;
  @ManyToOne('WorkflowScheduleRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'schedule_id' }) schedule?: object;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('timestamp with time zone', { name: 'scheduled_for', precision: 3 }) scheduledFor!: Date;
  @Column('varchar', { length: 8 }) outcome!: 'started' | 'skipped' | 'missed' | 'failed';
  @Column('uuid', { name: 'run_id', nullable: true }) runId!: string | null;
  @Column('timestamp with time zone', { precision: 3 }) at!: Date;
}

/** An inbound webhook trigger; its secrets are one AES-256-GCM sealed JSON array, bound to its id. */
@Entity('workflow_triggers')
@Index('workflow_triggers_workflow_created_idx', ['workflowId', 'createdAt', 'id'])
export class WorkflowTriggerRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @ManyToOne('WorkflowRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'workflow_id' }) workflow?: object;
  @Column('varchar', { length: 100, nullable: true }) name!: string | null;
  @Column('varchar', { length: 20 }) scheme!: 'standard-webhooks' | 'hmac-sha256' | 'bearer';
  @Column('varchar', { name: 'signature_header', length: 100, nullable: true }) signatureHeader!: string | null;
  @Column('varchar', { name: 'signature_encoding', length: 8, nullable: true }) signatureEncoding!: 'hex' | 'base64' | null;
  @Column('varchar', { name: 'signature_prefix', length: 32, nullable: true }) signaturePrefix!: string | null;
  @Column('text', { name: 'sealed_secrets' }) sealedSecrets!: string;
  @Column('text', { nullable: true }) mapping!: string | null;
  @Column('varchar', { length: 16 }) dedupe!: 'webhook-id' | 'idempotency-key' | 'signature' | 'header' | 'none';
  @Column('varchar', { name: 'dedupe_header', length: 100, nullable: true }) dedupeHeader!: string | null;
  @Column('varchar', { name: 'response_mode', length: 8 }) responseMode!: 'async' | 'sync';
  @Column('integer', { name: 'wait_seconds' }) waitSeconds!: number;
  @Column('integer', { name: 'workflow_version', nullable: true }) workflowVersion!: number | null;
  @Column('boolean') enabled!: boolean;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/** A request a trigger received and authenticated; a dedupe key is the trigger's once. */
@Entity('workflow_trigger_events')
@Index('workflow_trigger_events_trigger_created_idx', ['triggerId', 'createdAt', 'id'])
@Index('workflow_trigger_events_dedupe_key', ['triggerId', 'dedupeKey'], { unique: true, where: 'dedupe_key IS NOT NULL' })
@Index('workflow_trigger_events_created_idx', ['createdAt'])
export class TriggerEventRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'trigger_id' }) triggerId!: string;
  @ManyToOne('WorkflowTriggerRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'trigger_id' }) trigger?: object;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('varchar', { length: 64 }) source!: string;
  @Column('varchar', { length: 8 }) status!: 'started' | 'refused';
  @Column('uuid', { name: 'run_id', nullable: true }) runId!: string | null;
  @Column('varchar', { name: 'dedupe_key', length: 200, nullable: true }) dedupeKey!: string | null;
  @Column('text', { nullable: true }) error!: string | null;
  @Column('uuid', { name: 'replay_of', nullable: true }) replayOf!: string | null;
  @Column('jsonb') headers!: Record<string, string>;
  @Column('jsonb') query!: Record<string, unknown>;
  @Column('jsonb', { nullable: true }) body!: unknown;
}
