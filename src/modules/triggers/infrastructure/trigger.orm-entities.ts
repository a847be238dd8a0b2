import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

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

/**
 * A request a trigger received and authenticated; a dedupe key is the trigger's once, for as
 * long as its event is kept. The table is partitioned by id (HistoryPartitions): each partition
 * has its own unique index of the dedupe keys, and the insert locks the key for the rest.
 */
@Entity('workflow_trigger_events')
@Index('workflow_trigger_events_trigger_created_idx', ['triggerId', 'createdAt', 'id'])
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
