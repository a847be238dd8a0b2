import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { ExecutionRow } from './execution.orm-entity';

/**
 * The journal of an `llm.agent` execution: per turn, the model's reply (position 0) and each
 * tool call it started (positions 1..n, in the model's order). Written as the conversation
 * goes, each row committed before the loop goes on; read back by an attempt after a crash.
 */
@Entity('agent_execution_steps')
export class TranscriptRow {
  @PrimaryColumn('uuid', { name: 'execution_id', primaryKeyConstraintName: 'PK_agent_execution_steps' }) executionId!: string;
  @ManyToOne(() => ExecutionRow, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'execution_id', foreignKeyConstraintName: 'FK_agent_execution_steps_execution' })
  execution?: ExecutionRow;
  @PrimaryColumn('integer', { primaryKeyConstraintName: 'PK_agent_execution_steps' }) turn!: number;
  @PrimaryColumn('smallint', { primaryKeyConstraintName: 'PK_agent_execution_steps' }) position!: number;
  @Column('uuid', { name: 'organization_id' }) organizationId!: string;
  /** The model's id of a tool call; null for the model's reply. */
  @Column('varchar', { name: 'call_id', length: 256, nullable: true }) callId!: string | null;
  /** The model that answered, or the tool called. */
  @Column('varchar', { length: 256 }) name!: string;
  /**
   * The model's reply and any repair message, or the call's arguments. `json`, not `jsonb`: kept
   * as written, so a resumed conversation sends the model the very text the first attempt sent.
   */
  @Column('json') body!: unknown;
  /** A tool call's result (`json`, as `body`); null while it runs (and for the model's reply). */
  @Column('json', { nullable: true }) result!: unknown;
  @Column('timestamp with time zone', { name: 'started_at', precision: 3 }) startedAt!: Date;
  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true }) finishedAt!: Date | null;
}
