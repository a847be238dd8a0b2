import { Column, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { AuditActor, AuditTarget } from '../../../shared/audit/audit-trail';

type Changes = { before?: object | null; after?: object | null } | null;

/** What an event says, the same in the inbox and in the log. */
abstract class AuditContent {
  @Column('jsonb') actor!: AuditActor;
  /** The actor's and the target's ids, for the filters. */
  @Column('varchar', { name: 'actor_id', length: 64, nullable: true }) actorId!: string | null;
  @Column('varchar', { length: 64 }) action!: string;
  @Column('jsonb', { nullable: true }) target!: AuditTarget | null;
  @Column('varchar', { name: 'target_id', length: 200, nullable: true }) targetId!: string | null;
  @Column('varchar', { length: 16 }) outcome!: string;
  @Column('varchar', { name: 'request_id', length: 128, nullable: true }) requestId!: string | null;
  @Column('jsonb', { nullable: true }) changes!: Changes;
}

/**
 * An event as written with its change: a narrow row with one index, so the request pays for
 * little. The sealer moves it, chained, into `audit_events`. A trigger refuses UPDATE and
 * TRUNCATE, and a DELETE of an event not yet in `audit_events` (see the AuditLog migration).
 */
@Entity('audit_inbox')
export class AuditInboxRow extends AuditContent {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('timestamp with time zone', { name: 'occurred_at', precision: 3 }) occurredAt!: Date;
}

/**
 * The audit log: sealed events, each with its place in its organization's chain, written once
 * by the sealer and never changed. A trigger refuses UPDATE and TRUNCATE, and DELETE of an event
 * younger than its retention; with DATABASE_MIGRATION_URL the service's role may only INSERT
 * and SELECT (src/database/service-role.ts). No key to the
 * organization: its events outlive it.
 */
@Entity('audit_events')
@Index('audit_events_actor_idx', ['organizationId', 'actorId', 'occurredAt', 'id'])
@Index('audit_events_target_idx', ['organizationId', 'targetId', 'occurredAt', 'id'])
@Index('audit_events_action_idx', ['organizationId', 'action', 'occurredAt', 'id'])
@Index('audit_events_chain_key', ['organizationId', 'sequence'], { unique: true })
export class AuditEventRow extends AuditContent {
  /** The key is the organization's list order (newest first). */
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @PrimaryColumn('timestamp with time zone', { name: 'occurred_at', precision: 3 }) occurredAt!: Date;
  @PrimaryColumn('uuid') id!: string;
  @Column('bigint') sequence!: string;
  @Column('char', { name: 'previous_hash', length: 64 }) previousHash!: string;
  @Column('char', { length: 64 }) hash!: string;
}

/** Each organization's last sealed event, where its chain goes on; and the last purged, where it now begins. */
@Entity('audit_chain_heads')
export class AuditChainHeadRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('bigint') sequence!: string;
  @Column('char', { length: 64 }) hash!: string;
  @Column('bigint', { name: 'purged_through', default: 0 }) purgedThrough!: string;
  @Column('char', { name: 'purged_hash', length: 64, nullable: true }) purgedHash!: string | null;
  /** The first event linked with the chain key (the ones before have plain SHA-256 links), and that start signed with the key. */
  @Column('bigint', { name: 'keyed_from', nullable: true }) keyedFrom!: string | null;
  @Column('char', { name: 'keyed_mac', length: 64, nullable: true }) keyedMac!: string | null;
}

/** An organization's own audit retention (enterprise); without a row, the instance's AUDIT_RETENTION_DAYS. */
@Entity('audit_settings')
export class AuditSettingsRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('integer', { name: 'retention_days' }) retentionDays!: number;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamp with time zone', precision: 3 }) updatedAt!: Date;
}
