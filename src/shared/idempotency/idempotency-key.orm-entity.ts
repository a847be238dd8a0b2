import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One row per `Idempotency-Key` a client sent, scoped to its organization and the resource it
 * addressed (`agent:<id>`, `workflow:<id>`, ...). The first request's body hash and the
 * resource it created answer every repeat until `expires_at`.
 */
@Entity('idempotency_keys')
@Index('idempotency_keys_expires_idx', ['expiresAt'])
export class IdempotencyKeyRow {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId!: string;
  @PrimaryColumn('varchar', { length: 200 }) scope!: string;
  @PrimaryColumn('varchar', { length: 255 }) key!: string;
  @Column('char', { name: 'request_hash', length: 64 }) requestHash!: string;
  @Column('uuid', { name: 'resource_id' }) resourceId!: string;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 }) expiresAt!: Date;
}
