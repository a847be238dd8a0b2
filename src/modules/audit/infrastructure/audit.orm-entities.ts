import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { AuditActor, AuditTarget } from '../../../shared/audit/audit-trail';

/**
 * The audit log: appended to, never changed. A trigger refuses UPDATE (but the one sealing an
 * unsealed row: its sequence and hashes), DELETE and TRUNCATE; see the AuditLog migration. No
 * key to the organization: its events outlive it.
 */
@Entity('audit_events')
@Index('audit_events_actor_idx', ['organizationId', 'actorId', 'occurredAt', 'id'])
@Index('audit_events_target_idx', ['organizationId', 'targetId', 'occurredAt', 'id'])
@Index('audit_events_action_idx', ['organizationId', 'action', 'occurredAt', 'id'])
@Index('audit_events_chain_key', ['organizationId', 'sequence'], { unique: true, where: 'sequence IS NOT NULL' })
@Index('audit_events_unsealed_idx', ['id'], { where: 'hash IS NULL' })
export class AuditEventRow {
  /** The key is the organization's list order (newest first): one index fewer to write with every event. */
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @PrimaryColumn('timestamp with time zone', { name: 'occurred_at', precision: 3 }) occurredAt!: Date;
  @PrimaryColumn('uuid') id!: string;
  @Column('jsonb') actor!: AuditActor;
  /** The actor's and the target's ids, for the filters. */
  @Column('varchar', { name: 'actor_id', length: 64, nullable: true }) actorId!: string | null;
  @Column('varchar', { length: 64 }) action!: string;
  @Column('jsonb', { nullable: true }) target!: AuditTarget | null;
  @Column('varchar', { name: 'target_id', length: 200, nullable: true }) targetId!: string | null;
  @Column('varchar', { length: 16 }) outcome!: string;
  @Column('varchar', { name: 'request_id', length: 128, nullable: true }) requestId!: string | null;
  @Column('jsonb', { nullable: true }) changes!: { before?: object | null; after?: object | null } | null;
  @Column('bigint', { nullable: true }) sequence!: string | null;
  @Column('char', { name: 'previous_hash', length: 64, nullable: true }) previousHash!: string | null;
  @Column('char', { length: 64, nullable: true }) hash!: string | null;
}

/** Each organization's last sealed event: where its chain goes on. */
@Entity('audit_chain_heads')
export class AuditChainHeadRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('bigint') sequence!: string;
  @Column('char', { length: 64 }) hash!: string;
}
