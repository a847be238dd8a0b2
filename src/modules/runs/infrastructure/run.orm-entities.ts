import { ON_A_JOB } from '../../../database/durable-table';
import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

const CONCURRENCY_IN_PROGRESS = `concurrency_key IS NOT NULL AND status IN ('queued', 'running', 'waiting')`;

@Entity('workflow_runs')
// Run history: newest first per workflow, keyset on (created_at, id).
@Index('workflow_runs_workflow_created_idx', ['workflowId', 'createdAt', 'id'])
// GET /api/runs: the organization's runs across workflows.
@Index('workflow_runs_org_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('workflow_runs_unfinished_idx', ['createdAt'], { where: ON_A_JOB })
// A parent's children (a cancel reaches them).
@Index('workflow_runs_parent_idx', ['parentRunId'], { where: 'parent_run_id IS NOT NULL' })
// The runs of a workflow's key that hold a place, and apart those that wait for one, oldest first:
// a count of the places held reads the holders only, however many wait.
@Index('workflow_runs_concurrency_idx', ['workflowId', 'concurrencyKey', 'waitsForPlace', 'createdAt'], { where: CONCURRENCY_IN_PROGRESS })
export class RunRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @ManyToOne('WorkflowRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'workflow_id' }) workflow?: object;
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
  /** The run this one retries. */
  @Column('uuid', { name: 'retry_of', nullable: true }) retryOf!: string | null;
  /** The run that retries this one (set once: a second retry is refused). */
  @Column('uuid', { name: 'retried_by', nullable: true }) retriedBy!: string | null;
  /** A run of a workflow with `concurrency`: its key, and the limit it was started with. */
  @Column('varchar', { name: 'concurrency_key', length: 200, nullable: true }) concurrencyKey!: string | null;
  @Column('integer', { name: 'concurrency_limit', nullable: true }) concurrencyLimit!: number | null;
  /** Queued beyond the limit, on no job until a place is handed to it. */
  @Column('boolean', { name: 'waits_for_place', default: false }) waitsForPlace!: boolean;
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
  /** What a waiting wait step waits for (an approval, an event), as the run shows it. */
  @Column('jsonb', { name: 'waiting_for', nullable: true }) waitingFor!: unknown;
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

/**
 * What a wait step of a run waits for: an approval or an event, its answer once given. `pending`
 * until answered, or `closed` when the step timed out or the run ended without an answer.
 */
@Entity('workflow_run_waits')
// POST /api/events: the pending waits for one name and key of an organization.
@Index('workflow_run_waits_event_idx', ['organizationId', 'eventName', 'eventKey'], { where: "status = 'pending' AND kind = 'event'" })
// GET /api/approvals: an organization's pending approvals, oldest first.
@Index('workflow_run_waits_approval_idx', ['organizationId', 'createdAt', 'runId', 'stepId'], {
  where: "status = 'pending' AND kind = 'approval'",
})
export class RunWaitRow {
  @PrimaryColumn('uuid', { name: 'run_id', primaryKeyConstraintName: 'PK_workflow_run_waits' }) runId!: string;
  @ManyToOne(() => RunRow, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'run_id', foreignKeyConstraintName: 'FK_workflow_run_waits_run' })
  run?: RunRow;
  @PrimaryColumn('varchar', { name: 'step_id', length: 64, primaryKeyConstraintName: 'PK_workflow_run_waits' }) stepId!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'workflow_id' }) workflowId!: string;
  @Column('varchar', { length: 16 }) kind!: string;
  @Column('varchar', { name: 'event_name', length: 200, nullable: true }) eventName!: string | null;
  @Column('varchar', { name: 'event_key', length: 500, nullable: true }) eventKey!: string | null;
  /** The JSON Schema an answer's data must match. */
  @Column('jsonb', { nullable: true }) schema!: unknown;
  @Column('jsonb', { nullable: true }) approvers!: unknown;
  @Column('boolean', { name: 'self_approval', default: true }) selfApproval!: boolean;
  @Column('varchar', { length: 16 }) status!: string;
  /** `{ data, by, at }`: the step's output. */
  @Column('jsonb', { nullable: true }) answer!: unknown;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'timeout_at', precision: 3, nullable: true }) timeoutAt!: Date | null;
}

/** An event no wait was waiting for, kept a while (WORKFLOW_EVENT_KEEP_SECONDS) for a wait that begins just after it. */
@Entity('workflow_events')
@Index('workflow_events_match_idx', ['organizationId', 'name', 'key', 'expiresAt'])
@Index('workflow_events_expires_idx', ['expiresAt'])
export class KeptEventRow {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_workflow_events' }) id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'organization_id', foreignKeyConstraintName: 'FK_workflow_events_organization' })
  organization?: object;
  @Column('varchar', { length: 200 }) name!: string;
  @Column('varchar', { length: 500 }) key!: string;
  @Column('jsonb', { nullable: true }) data!: unknown;
  /** Who sent it. */
  @Column('jsonb') by!: unknown;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}
