import { ON_A_JOB } from '../../../database/durable-table';
import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

@Entity('webhook_endpoints')
@Index('webhook_endpoints_org_created_idx', ['organizationId', 'createdAt', 'id'])
export class WebhookEndpointRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @ManyToOne('OrganizationRow', { onDelete: 'CASCADE' }) @JoinColumn({ name: 'organization_id' }) organization?: object;
  @Column('text') url!: string;
  @Column('text', { nullable: true }) description!: string | null;
  @Column('jsonb', { name: 'event_types' }) eventTypes!: string[];
  @Column('boolean') enabled!: boolean;
  /** The signing secrets with their expiry, as one AES-256-GCM sealed JSON array. */
  @Column('text', { name: 'sealed_secrets' }) sealedSecrets!: string;
  @Column('text', { name: 'disabled_reason', nullable: true }) disabledReason!: string | null;
  @Column('timestamp with time zone', { name: 'failing_since', precision: 3, nullable: true }) failingSince!: Date | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'updated_at', precision: 3 }) updatedAt!: Date;
}

/** One event for one endpoint: the outbox row, written with the change that caused it. */
@Entity('webhook_messages')
@Index('webhook_messages_endpoint_created_idx', ['endpointId', 'createdAt', 'id'])
@Index('webhook_messages_unfinished_idx', ['createdAt'], { where: ON_A_JOB })
export class WebhookMessageRow {
  @PrimaryColumn('text') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'endpoint_id' }) endpointId!: string;
  @ManyToOne(() => WebhookEndpointRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'endpoint_id' }) endpoint?: WebhookEndpointRow;
  @Column('text') type!: string;
  /** The exact bytes sent and signed. */
  @Column('text') payload!: string;
  /** queued and running (API: pending), succeeded, failed, skipped. */
  @Column('varchar', { length: 16 }) status!: string;
  @Column('integer') attempts!: number;
  @Column('uuid', { name: 'job_id', nullable: true }) jobId!: string | null;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('timestamp with time zone', { name: 'next_attempt_at', precision: 3, nullable: true }) nextAttemptAt!: Date | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}

@Entity('webhook_attempts')
@Index('webhook_attempts_message_idx', ['messageId', 'attemptedAt'])
export class WebhookAttemptRow {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_webhook_attempts' }) id!: string;
  /** In the primary key: the attempts are partitioned by their message's id. */
  @PrimaryColumn('text', { name: 'message_id', primaryKeyConstraintName: 'PK_webhook_attempts' }) messageId!: string;
  @ManyToOne(() => WebhookMessageRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'message_id' }) message?: WebhookMessageRow;
  @Column('timestamp with time zone', { name: 'attempted_at', precision: 3 }) attemptedAt!: Date;
  @Column('integer', { name: 'status_code', nullable: true }) statusCode!: number | null;
  @Column('integer', { name: 'latency_ms' }) latencyMs!: number;
  /** The first 4 KiB of the response body. */
  @Column('text', { name: 'response_body', nullable: true }) responseBody!: string | null;
  @Column('text', { nullable: true }) error!: string | null;
}
