import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { DurableTable, rowsOf, withAlongside } from '../../../database/durable-table';
import { keysetSql } from '../../../database/keyset';
import { ReadDatabase } from '../../../database/read-database';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Statement } from '../../../shared/jobs/statement';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { Execution, ExecutionStatus, HistoryFilter, Trigger } from '../domain/execution';
import { ExecutionRepository, StartedAttempt, UnfinishedExecution } from '../domain/execution.repository';

interface RawExecution {
  id: string;
  organization_id: string;
  agent_id: string;
  status: ExecutionStatus;
  input: unknown;
  output: unknown;
  error: Failure | null;
  attempts: number;
  job_id: string | null;
  triggered_by: Trigger;
  retry_of: string | null;
  retried_by: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const EXECUTIONS = new DurableTable('agent_executions', 'uuid', true);
const UNFINISHED_SQL = EXECUTIONS.unfinished;

/** Plain SQL: each status change is one guarded statement, and the worker's path is a few round trips. */
@Injectable()
export class TypeOrmExecutionRepository extends ExecutionRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly reads: ReadDatabase,
  ) {
    super();
  }

  async insert(e: Execution): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO agent_executions (id, organization_id, agent_id, status, input, attempts, job_id, triggered_by, created_at, retry_of)
       VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9)`,
      [e.id, e.organizationId, e.agentId, e.status, json(e.input), e.jobId, json(e.triggeredBy), e.createdAt, e.retryOf],
    );
  }

  async insertAll(executions: Execution[], alongside: Statement): Promise<void> {
    const column = <T>(value: (e: Execution) => T) => executions.map(value);
    const { sql, params } = withAlongside(
      'jobs',
      {
        sql: `INSERT INTO agent_executions (id, organization_id, agent_id, status, input, attempts, job_id, triggered_by, created_at, retry_of)
              SELECT id, organization_id, agent_id, status, input, 0, job_id, triggered_by, created_at, retry_of
              FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::jsonb[], $6::uuid[], $7::jsonb[], $8::timestamptz[], $9::uuid[])
                AS e(id, organization_id, agent_id, status, input, job_id, triggered_by, created_at, retry_of)`,
        params: [
          column((e) => e.id),
          column((e) => e.organizationId),
          column((e) => e.agentId),
          column((e) => e.status),
          column((e) => json(e.input)),
          column((e) => e.jobId),
          column((e) => json(e.triggeredBy)),
          column((e) => e.createdAt),
          column((e) => e.retryOf),
        ],
      },
      alongside,
    );
    await this.txHost.tx.query(sql, params);
  }

  async markRetried(organizationId: string, id: string, retryId: string): Promise<boolean> {
    const rows = await this.returning<{ id: string }>(
      `UPDATE agent_executions SET retried_by = $3
       WHERE organization_id = $1 AND id = $2 AND retried_by IS NULL AND NOT ${UNFINISHED_SQL} RETURNING id`,
      [organizationId, id, retryId],
    );
    return rows.length > 0;
  }

  async find(organizationId: string, agentId: string, id: string): Promise<Execution | null> {
    const [row] = await this.select('WHERE organization_id = $1 AND agent_id = $2 AND id = $3', [organizationId, agentId, id]);
    return row ?? null;
  }

  async findById(id: string): Promise<Execution | null> {
    const [row] = await this.select('WHERE id = $1', [id]);
    return row ?? null;
  }

  /** From the read replica when there is one (ReadDatabase): a page of history may lag. */
  async history(organizationId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Execution>> {
    const scope = { organization_id: organizationId, ...(filter.agentId ? { agent_id: filter.agentId } : {}) };
    const { tail, params } = keysetSql(scope, filter, page);
    const rows = await this.select(tail, params, this.reads.manager);
    return toPage(rows, page.limit, (e) => e);
  }

  async start(jobs: JobRef[]): Promise<StartedAttempt[]> {
    const rows = await this.returning<
      RawExecution & { kind: string; config: Record<string, unknown>; timeout_ms: number; max_attempts: number }
    >(
      `UPDATE agent_executions e
       SET status = 'running', attempts = e.attempts + 1, started_at = COALESCE(e.started_at, now())
       FROM agents a
       WHERE ${EXECUTIONS.startedBy('e')} AND a.id = e.agent_id
       RETURNING e.*, a.kind, a.config, a.timeout_ms, a.max_attempts`,
      EXECUTIONS.startParams(jobs),
    );
    return rows.map((row) => ({
      execution: toExecution(row),
      kind: row.kind,
      config: row.config,
      timeoutMs: row.timeout_ms,
      maxAttempts: row.max_attempts,
    }));
  }

  async finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Execution | null>> {
    const input = outcomes.map(({ id, outcome }) => ({
      id,
      status: outcome.status,
      output: 'output' in outcome ? (outcome.output ?? null) : null,
      error: 'error' in outcome ? outcome.error : null,
    }));
    const rows = await this.txHost.tx.query<RawExecution[]>(
      `WITH outcome AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS o(id uuid, status text, output jsonb, error jsonb)),
       done AS (
         UPDATE agent_executions e
         SET status = o.status, output = o.output, error = NULLIF(o.error, 'null'::jsonb), finished_at = now()
         FROM outcome o WHERE e.id = o.id AND e.status = 'running' AND e.id = ANY($2::uuid[])
         RETURNING e.*
       ) SELECT * FROM done`,
      // The ids again, as an array: the planner prunes the partitions by it (not by the JSON's).
      [JSON.stringify(input), input.map((o) => o.id)],
    );
    const byId = new Map(rows.map((row) => [row.id, toExecution(row)]));
    return outcomes.map(({ id }) => byId.get(id) ?? null);
  }

  async startOwned(e: Execution): Promise<Pick<Execution, 'attempts'> | null> {
    // A later attempt keeps the stored input when it is the same (the usual case): its TOAST pointer is carried over, not copied.
    const [row] = await this.txHost.tx.query<Array<Pick<RawExecution, 'attempts'>>>(
      `INSERT INTO agent_executions (id, organization_id, agent_id, status, input, attempts, job_id, triggered_by, created_at, started_at)
       VALUES ($1, $2, $3, 'running', $4, 1, NULL, $5, now(), now())
       ON CONFLICT (id) DO UPDATE SET status = 'running', attempts = agent_executions.attempts + 1,
         input = CASE WHEN agent_executions.input IS DISTINCT FROM EXCLUDED.input THEN EXCLUDED.input ELSE agent_executions.input END
         WHERE agent_executions.${UNFINISHED_SQL}
       RETURNING attempts`,
      [e.id, e.organizationId, e.agentId, json(e.input), json(e.triggeredBy)],
    );
    return row ? { attempts: row.attempts } : null;
  }

  async wait(id: string, fromJobId: string, toJobId: string, _at: Date, error: Failure | null): Promise<Execution | null> {
    const [row] = await this.returning<RawExecution>(
      `UPDATE agent_executions SET status = 'waiting', job_id = $3, error = $4 WHERE id = $1 AND job_id = $2 AND status = 'running' RETURNING *`,
      [id, fromJobId, toJobId, json(error)],
    );
    return row ? toExecution(row) : null;
  }

  async cancel(organizationId: string, agentId: string, id: string, error: Failure): Promise<Execution | null> {
    const [row] = await this.returning<RawExecution>(
      `UPDATE agent_executions SET status = 'canceled', finished_at = now(), error = $4
       WHERE organization_id = $1 AND agent_id = $2 AND id = $3 AND ${UNFINISHED_SQL} RETURNING *`,
      [organizationId, agentId, id, json(error)],
    );
    return row ? toExecution(row) : null;
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedExecution[]> {
    // A step's execution is its run's to end: only those a user started live on jobs of their own.
    const rows = await EXECUTIONS.unfinishedOnJobs<{
      id: string;
      organization_id: string;
      kind: string;
      job_id: string | null;
      attempts: number;
      max_attempts: number;
      timeout_ms: number;
    }>((sql, params) => this.returning(sql, params), olderThanMs, limit, {
      columns: 't.id, t.organization_id, a.kind, t.job_id, t.attempts, a.max_attempts, a.timeout_ms',
      join: 'JOIN agents a ON a.id = t.agent_id',
      where: "t.triggered_by->>'type' = 'user'",
    });
    return rows.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      kind: r.kind,
      jobId: r.job_id,
      attempts: r.attempts,
      maxAttempts: r.max_attempts,
      timeoutMs: r.timeout_ms,
    }));
  }

  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    return EXECUTIONS.moveToJob((sql, params) => this.returning(sql, params), id, fromJobId, toJobId, `status = 'queued'`);
  }

  async abandon(id: string, jobId: string | null, error: Failure): Promise<Execution | null> {
    const [row] = await this.returning<RawExecution>(
      `UPDATE agent_executions SET status = 'failed', error = $3, finished_at = now() WHERE ${EXECUTIONS.onItsJob} RETURNING *`,
      [id, jobId, json(error)],
    );
    return row ? toExecution(row) : null;
  }

  private async select(tail: string, params: unknown[], db: EntityManager = this.txHost.tx): Promise<Execution[]> {
    const rows = await db.query<RawExecution[]>(`SELECT * FROM agent_executions ${tail}`, params);
    return rows.map(toExecution);
  }

  /** TypeORM answers `[rows, count]` for UPDATE ... RETURNING and plain rows otherwise. */
  private returning<T = RawExecution>(sql: string, params: unknown[]): Promise<T[]> {
    return rowsOf<T>(this.txHost.tx, sql, params);
  }
}

/** jsonb parameters go as JSON text: a bare string or number must not be taken for SQL text. */
const json = (value: unknown): string => JSON.stringify(value ?? null);

function toExecution(row: RawExecution): Execution {
  return {
    id: row.id,
    organizationId: row.organization_id,
    agentId: row.agent_id,
    status: row.status,
    input: row.input,
    output: row.output,
    error: row.error,
    attempts: row.attempts,
    jobId: row.job_id,
    triggeredBy: row.triggered_by,
    retryOf: row.retry_of,
    retriedBy: row.retried_by,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}
