import { ON_A_JOB } from '../../../database/durable-table';
import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { AgentRow } from './agent.orm-entity';

@Entity('agent_executions')
@Index('agent_executions_agent_created_idx', ['agentId', 'createdAt', 'id'])
// GET /api/executions: the organization's executions across agents, keyset on (created_at, id).
@Index('agent_executions_org_created_idx', ['organizationId', 'createdAt', 'id'])
// The reconciler's scan: only unfinished executions are in this index.
@Index('agent_executions_unfinished_idx', ['createdAt'], { where: ON_A_JOB })
export class ExecutionRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  @Column('uuid', { name: 'agent_id' }) agentId!: string;
  @ManyToOne(() => AgentRow, { onDelete: 'CASCADE' }) @JoinColumn({ name: 'agent_id' }) agent?: AgentRow;
  @Column('varchar', { length: 16 }) status!: string;
  @Column('jsonb', { nullable: true }) input!: unknown;
  @Column('jsonb', { nullable: true }) output!: unknown;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('integer', { default: 0 }) attempts!: number;
  /** The queue job currently carrying this execution; the reconciler checks it is alive. */
  @Column('uuid', { name: 'job_id', nullable: true }) jobId!: string | null;
  @Column('jsonb', { name: 'triggered_by' }) triggeredBy!: { type: string; id: string };
  /** The execution this one retries. */
  @Column('uuid', { name: 'retry_of', nullable: true }) retryOf!: string | null;
  /** The execution that retries this one (set once: a second retry is refused). */
  @Column('uuid', { name: 'retried_by', nullable: true }) retriedBy!: string | null;
  @Column('timestamp with time zone', { name: 'created_at', precision: 3 }) createdAt!: Date;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3, nullable: true }) startedAt!: Date | null;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}
