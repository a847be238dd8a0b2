import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { DurableTable, withAlongside } from '../../../database/durable-table';
import { keysetSql } from '../../../database/keyset';
import { ReadDatabase } from '../../../database/read-database';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Run, RunItem, RunStatus, StepRun, StepStatus } from '../domain/run';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Statement } from '../../../shared/jobs/statement';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { AdmittedRun, HistoryFilter, ItemWrite, RunRepository, StepWrite, UnfinishedRun, WaitingKey } from '../domain/run.repository';
import { WaitingFor } from '../domain/wait';

interface RawRun {
  id: string;
  organization_id: string;
  workflow_id: string;
  workflow_version: number;
  status: RunStatus;
  input: unknown;
  output: unknown;
  error: Failure | null;
  attempts: number;
  job_id: string | null;
  timeout_ms: number;
  triggered_by: Run['triggeredBy'];
  parent_run_id: string | null;
  depth: number;
  retry_of: string | null;
  retried_by: string | null;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  waits_for_place: boolean;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

interface RawItem {
  index: number;
  status: RunItem['status'];
  attempts: number;
  output: unknown;
  error: Failure | null;
  execution_id: string | null;
  resume_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
}

interface RawStep {
  run_id: string;
  step_id: string;
  status: StepStatus;
  attempts: number;
  input: unknown;
  output: unknown;
  error: Failure | null;
  execution_id: string | null;
  resume_at: Date | null;
  reason: string | null;
  child_run_id: string | null;
  waiting_for: WaitingFor | null;
  started_at: Date | null;
  finished_at: Date | null;
}

/** A waiting run's job starts later: the reconciler leaves it alone (it keeps only runs on a job moving). */
const RUNS = new DurableTable('workflow_runs', 'uuid', true);
const UNFINISHED = RUNS.unfinished;
/**
 * Steps of a run that ends: those in flight or waiting are canceled, those not started skipped.
 * A wait step keeps what it waited for (its wait is closed with the run).
 */
const END_STEPS = `status = CASE WHEN s.status IN ('running', 'waiting') THEN 'canceled' ELSE 'skipped' END,
  reason = CASE WHEN s.status = 'pending' THEN 'the run ended without it' ELSE s.reason END, resume_at = NULL, finished_at = now()`;
const OPEN_STEPS = `s.status IN ('pending', 'running', 'waiting')`;
/** Items of a run that ends and are not final: canceled. */
/** Runs of a workflow's key that hold a place (`$1` workflow, `$2` key): in progress, or queued on a job of their own. */
const HOLDS_PLACE = `workflow_id = $1 AND concurrency_key = $2 AND status IN ('queued', 'running', 'waiting') AND NOT waits_for_place`;
const END_ITEMS = (runs: string, ids?: string) =>
  `UPDATE workflow_run_items i SET status = 'canceled', resume_at = NULL, finished_at = now()
   FROM ${runs} e WHERE i.run_id = e.id AND i.status IN ('pending', 'running', 'waiting')${ids ? ` AND i.run_id = ANY(${ids}::uuid[])` : ''}`;

/**
 * The ids a batched statement touches, as a parameter of their own beside the JSON of its rows:
 * `... AND r.id = ANY($n)` lets the planner prune the history partitions to those that hold
 * them (a join on the JSON's ids alone plans every partition, which doubled these statements'
 * planning).
 */
function runIds(ids: string[]): string[] {
  return [...new Set(ids)];
}

/** Plain SQL: every change is one guarded statement, and concurrent runs' step writes share one. */
@Injectable()
export class TypeOrmRunRepository extends RunRepository {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly reads: ReadDatabase,
  ) {
    super();
  }

  async insert(run: Run): Promise<void> {
    const { sql, params } = insertRuns([run]);
    await this.query(sql, params);
  }

  async insertAll(runs: Run[], alongside: Statement): Promise<void> {
    const { sql, params } = withAlongside('jobs', insertRuns(runs), alongside);
    await this.query(sql, params);
  }

  async markRetried(organizationId: string, id: string, retryId: string): Promise<boolean> {
    const rows = await this.query<{ id: string }>(
      `WITH marked AS (
         UPDATE workflow_runs SET retried_by = $3
         WHERE organization_id = $1 AND id = $2 AND retried_by IS NULL AND NOT ${UNFINISHED} RETURNING id
       ) SELECT * FROM marked`,
      [organizationId, id, retryId],
    );
    return rows.length > 0;
  }

  async find(organizationId: string, workflowId: string, id: string): Promise<Run | null> {
    const [row] = await this.query<RawRun>('SELECT * FROM workflow_runs WHERE organization_id = $1 AND workflow_id = $2 AND id = $3', [
      organizationId,
      workflowId,
      id,
    ]);
    if (!row) return null;
    const [run] = await this.withSteps([row]);
    const counts = await this.query<{ step_id: string; status: RunItem['status']; count: string }>(
      'SELECT step_id, status, count(*) AS count FROM workflow_run_items WHERE run_id = $1 GROUP BY step_id, status',
      [id],
    );
    for (const c of counts) {
      const step = run.steps.find((s) => s.id === c.step_id);
      if (!step) continue;
      step.items ??= { total: 0 };
      step.items[c.status] = Number(c.count);
      step.items.total += Number(c.count);
    }
    return run;
  }

  async findLive(organizationId: string, workflowId: string, id: string): Promise<Run | null> {
    // One statement (a stream reads at every change of the run): the steps come as JSON rows.
    const [row] = await this.query<RawRun & { steps: Array<Record<keyof RawStep, unknown>> }>(
      `SELECT r.*, COALESCE((SELECT json_agg(s ORDER BY s.position) FROM workflow_run_steps s WHERE s.run_id = r.id), '[]') AS steps
       FROM workflow_runs r WHERE r.organization_id = $1 AND r.workflow_id = $2 AND r.id = $3`,
      [organizationId, workflowId, id],
    );
    return row
      ? toRun(
          row,
          row.steps.map((s) => toStep(fromJsonRow(s))),
        )
      : null;
  }

  async findById(id: string): Promise<Run | null> {
    const [row] = await this.query<RawRun>('SELECT * FROM workflow_runs WHERE id = $1', [id]);
    return row ? (await this.withSteps([row]))[0] : null;
  }

  /** From the read replica when there is one (ReadDatabase): a page of history may lag. */
  async history(organizationId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Run>> {
    const scope = { organization_id: organizationId, ...(filter.workflowId ? { workflow_id: filter.workflowId } : {}) };
    const { tail, params } = keysetSql(scope, filter, page);
    const rows = await this.reads.manager.query<RawRun[]>(`SELECT * FROM workflow_runs ${tail}`, params);
    return toPage(
      rows.map((r) => toRun(r, [])),
      page.limit,
      (r) => r,
    );
  }

  async start(jobs: JobRef[]): Promise<Run[]> {
    const rows = await this.query<RawRun>(
      `WITH started AS (
         UPDATE workflow_runs
         SET status = 'running', attempts = attempts + CASE WHEN status = 'waiting' THEN 0 ELSE 1 END, started_at = COALESCE(started_at, now())
         WHERE ${RUNS.startedBy()} RETURNING *
       ) SELECT * FROM started`,
      RUNS.startParams(jobs),
    );
    return this.withSteps(rows);
  }

  async wait(id: string, fromJobId: string, toJobId: string): Promise<Run | null> {
    const rows = await this.query<RawRun>(
      `WITH parked AS (
         UPDATE workflow_runs SET status = 'waiting', job_id = $3 WHERE id = $1 AND job_id = $2 AND status = 'running' RETURNING *
       ) SELECT * FROM parked`,
      [id, fromJobId, toJobId],
    );
    return rows.length ? (await this.withSteps(rows))[0] : null;
  }

  async writeSteps(writes: StepWrite[]): Promise<boolean[]> {
    const rows = await this.query<{ run_id: string; step_id: string }>(
      `WITH w AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb)
           AS w(run_id uuid, step_id text, status text, attempts int, input jsonb, has_input boolean,
                output jsonb, error jsonb, execution_id uuid, resume_at timestamptz, reason text, child_run_id uuid,
                waiting_for jsonb)
       ), done AS (
         UPDATE workflow_run_steps s SET
           status = w.status,
           attempts = COALESCE(w.attempts, s.attempts),
           input = CASE WHEN w.has_input THEN w.input ELSE s.input END,
           output = CASE WHEN w.status = 'succeeded' THEN w.output ELSE NULL END,
           error = NULLIF(w.error, 'null'::jsonb),
           execution_id = COALESCE(w.execution_id, s.execution_id),
           resume_at = w.resume_at,
           reason = w.reason,
           child_run_id = COALESCE(w.child_run_id, s.child_run_id),
           waiting_for = NULLIF(w.waiting_for, 'null'::jsonb),
           started_at = CASE WHEN w.status IN ('running', 'waiting') THEN COALESCE(s.started_at, now()) ELSE s.started_at END,
           finished_at = CASE WHEN w.status IN ('pending', 'running', 'waiting') THEN NULL ELSE now() END
         FROM w JOIN workflow_runs r ON r.id = w.run_id AND r.status = 'running' AND r.id = ANY($2::uuid[])
         WHERE s.run_id = w.run_id AND s.step_id = w.step_id AND ${OPEN_STEPS} AND s.run_id = ANY($2::uuid[])
         RETURNING s.run_id, s.step_id
       ) SELECT * FROM done`,
      [
        JSON.stringify(
          writes.map((w) => ({
            run_id: w.runId,
            step_id: w.stepId,
            status: w.status,
            attempts: w.attempts ?? null,
            input: w.input ?? null,
            has_input: w.input !== undefined,
            output: w.output ?? null,
            error: w.error ?? null,
            execution_id: w.executionId ?? null,
            resume_at: w.resumeAt ?? null,
            reason: w.reason ?? null,
            child_run_id: w.childRunId ?? null,
            waiting_for: w.waitingFor ?? null,
          })),
        ),
        runIds(writes.map((w) => w.runId)),
      ],
    );
    const applied = new Set(rows.map((r) => `${r.run_id}:${r.step_id}`));
    return writes.map((w) => applied.has(`${w.runId}:${w.stepId}`));
  }

  async finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Run | null>> {
    const rows = await this.query<RawRun>(
      `WITH o AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS o(id uuid, status text, output jsonb, error jsonb)
       ), finished AS (
         UPDATE workflow_runs r SET status = o.status, output = o.output, error = NULLIF(o.error, 'null'::jsonb), finished_at = now()
         FROM o WHERE r.id = o.id AND r.status = 'running' AND r.id = ANY($2::uuid[]) RETURNING r.*
       ), steps AS (
         UPDATE workflow_run_steps s SET ${END_STEPS}
         FROM finished f WHERE s.run_id = f.id AND ${OPEN_STEPS} AND s.run_id = ANY($2::uuid[])
       ), items AS (${END_ITEMS('finished', '$2')}
       ) SELECT * FROM finished`,
      [
        JSON.stringify(
          outcomes.map(({ id, outcome }) =>
            outcome.status === 'succeeded'
              ? { id, status: outcome.status, output: outcome.output ?? null, error: null }
              : { id, status: outcome.status, output: null, error: outcome.error },
          ),
        ),
        runIds(outcomes.map((o) => o.id)),
      ],
    );
    const runs = new Map((await this.withSteps(rows)).map((r) => [r.id, r]));
    return outcomes.map((o) => runs.get(o.id) ?? null);
  }

  async cancel(organizationId: string, workflowId: string, id: string, error: Failure): Promise<Run | null> {
    // RETURNING id: the run is read whole once, after the statement (input and output are not read twice).
    const [row] = await this.query<{ id: string }>(
      `WITH canceled AS (
         UPDATE workflow_runs SET status = 'canceled', finished_at = now(), error = $4
         WHERE organization_id = $1 AND workflow_id = $2 AND id = $3 AND ${UNFINISHED} RETURNING id
       ), steps AS (
         UPDATE workflow_run_steps s SET ${END_STEPS}
         FROM canceled c WHERE s.run_id = c.id AND ${OPEN_STEPS}
       ), items AS (${END_ITEMS('canceled')}
       ) SELECT * FROM canceled`,
      [organizationId, workflowId, id, json(error)],
    );
    // The steps' new statuses are visible after the statement: read them now.
    return row ? this.findById(row.id) : null;
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedRun[]> {
    const rows = await RUNS.unfinishedOnJobs<{
      id: string;
      organization_id: string;
      job_id: string | null;
      attempts: number;
      timeout_ms: number;
    }>((sql, params) => this.query(sql, params), olderThanMs, limit, {
      columns: 't.id, t.organization_id, t.job_id, t.attempts, t.timeout_ms',
      // On no job until a place is handed to it: not lost (the hand-over is waitingKeys' business).
      where: 'NOT t.waits_for_place',
    });
    return rows.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      jobId: r.job_id,
      attempts: r.attempts,
      timeoutMs: r.timeout_ms,
    }));
  }

  moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    return RUNS.moveToJob((sql, params) => this.query(sql, params), id, fromJobId, toJobId);
  }

  async abandon(id: string, jobId: string | null, error: Failure): Promise<Run | null> {
    const rows = await this.query<{ id: string }>(
      `WITH gone AS (
         UPDATE workflow_runs SET status = 'failed', error = $3, finished_at = now()
         WHERE ${RUNS.onItsJob} RETURNING id
       ), steps AS (
         UPDATE workflow_run_steps s SET ${END_STEPS}
         FROM gone g WHERE s.run_id = g.id AND ${OPEN_STEPS}
       ), items AS (${END_ITEMS('gone')}
       ) SELECT * FROM gone`,
      [id, jobId, json(error)],
    );
    return rows.length ? this.findById(id) : null;
  }

  async beginItems(runId: string, stepId: string, items: unknown[]): Promise<boolean> {
    const rows = await this.query<{ step_id: string }>(
      `WITH begun AS (
         UPDATE workflow_run_steps s
         SET status = 'running', input = $3, attempts = 1, started_at = COALESCE(s.started_at, now())
         FROM workflow_runs r
         WHERE r.id = $1 AND r.status = 'running' AND s.run_id = $1 AND s.step_id = $2 AND ${OPEN_STEPS}
         RETURNING s.step_id
       ), items AS (
         INSERT INTO workflow_run_items (run_id, step_id, index, status)
         SELECT $1, $2, i, 'pending' FROM begun, generate_series(0, $4::int - 1) AS i
         ON CONFLICT DO NOTHING
       ) SELECT * FROM begun`,
      [runId, stepId, JSON.stringify(items), items.length],
    );
    return rows.length > 0;
  }

  openItems(runId: string, stepId: string): Promise<RunItem[]> {
    return this.items(`run_id = $1 AND step_id = $2 AND status IN ('pending', 'running', 'waiting') ORDER BY index`, [runId, stepId]);
  }

  allItems(runId: string, stepId: string): Promise<RunItem[]> {
    return this.items(`run_id = $1 AND step_id = $2 ORDER BY index`, [runId, stepId]);
  }

  itemPage(runId: string, stepId: string, afterIndex: number, limit: number): Promise<RunItem[]> {
    return this.items(`run_id = $1 AND step_id = $2 AND index > $3 ORDER BY index LIMIT $4`, [runId, stepId, afterIndex, limit]);
  }

  async writeItems(writes: ItemWrite[]): Promise<boolean[]> {
    const rows = await this.query<{ run_id: string; step_id: string; index: number }>(
      `WITH w AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb)
           AS w(run_id uuid, step_id text, index int, status text, attempts int, output jsonb, error jsonb, execution_id uuid, resume_at timestamptz)
       ), done AS (
         UPDATE workflow_run_items i SET
           status = w.status,
           attempts = w.attempts,
           output = CASE WHEN w.status = 'succeeded' THEN w.output ELSE NULL END,
           error = NULLIF(w.error, 'null'::jsonb),
           execution_id = COALESCE(w.execution_id, i.execution_id),
           resume_at = w.resume_at,
           started_at = COALESCE(i.started_at, now()),
           finished_at = CASE WHEN w.status IN ('pending', 'running', 'waiting') THEN NULL ELSE now() END
         FROM w JOIN workflow_runs r ON r.id = w.run_id AND r.status = 'running' AND r.id = ANY($2::uuid[])
         WHERE i.run_id = w.run_id AND i.step_id = w.step_id AND i.index = w.index AND i.status IN ('pending', 'running', 'waiting')
           AND i.run_id = ANY($2::uuid[])
         RETURNING i.run_id, i.step_id, i.index
       ) SELECT * FROM done`,
      [
        JSON.stringify(
          writes.map((w) => ({
            run_id: w.runId,
            step_id: w.stepId,
            index: w.index,
            status: w.status,
            attempts: w.attempts,
            output: w.output ?? null,
            error: w.error ?? null,
            execution_id: w.executionId ?? null,
            resume_at: w.resumeAt ?? null,
          })),
        ),
        runIds(writes.map((w) => w.runId)),
      ],
    );
    const applied = new Set(rows.map((r) => `${r.run_id}:${r.step_id}:${r.index}`));
    return writes.map((w) => applied.has(`${w.runId}:${w.stepId}:${w.index}`));
  }

  private async items(where: string, params: unknown[]): Promise<RunItem[]> {
    const rows = await this.query<RawItem>(`SELECT * FROM workflow_run_items WHERE ${where}`, params);
    return rows.map((r) => ({
      index: r.index,
      status: r.status,
      attempts: r.attempts,
      output: r.output,
      error: r.error,
      executionId: r.execution_id,
      resumeAt: r.resume_at,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
    }));
  }

  async waitingJobs(runIds: string[]): Promise<string[]> {
    if (!runIds.length) return [];
    // FOR UPDATE in its own statement: a parent parking now is seen once its transaction commits.
    const rows = await this.query<{ job_id: string | null; status: string }>(
      'SELECT job_id, status FROM workflow_runs WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE',
      [runIds],
    );
    return rows.filter((r) => r.status === 'waiting' && r.job_id).map((r) => r.job_id!);
  }

  async awakened(runId: string): Promise<boolean> {
    const [row] = await this.query<{ awakened: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM workflow_run_steps s JOIN workflow_runs c ON c.id = s.child_run_id
         WHERE s.run_id = $1 AND s.status = 'waiting' AND c.status NOT IN ('queued', 'running', 'waiting')
       ) OR EXISTS (
         SELECT 1 FROM workflow_run_waits w WHERE w.run_id = $1 AND w.status = 'answered'
           AND EXISTS (SELECT 1 FROM workflow_run_steps s WHERE s.run_id = $1 AND s.step_id = w.step_id AND s.status = 'waiting')
       ) AS awakened`,
      [runId],
    );
    return row.awakened;
  }

  async unfinishedChildren(runId: string): Promise<Array<{ id: string; workflowId: string; organizationId: string }>> {
    const rows = await this.query<{ id: string; workflow_id: string; organization_id: string }>(
      `SELECT id, workflow_id, organization_id FROM workflow_runs WHERE parent_run_id = $1 AND ${UNFINISHED}`,
      [runId],
    );
    return rows.map((r) => ({ id: r.id, workflowId: r.workflow_id, organizationId: r.organization_id }));
  }

  async claimPlaces(workflowId: string, key: string): Promise<void> {
    await this.query(`SELECT pg_advisory_xact_lock(hashtextextended('workflow-concurrency:' || $1::text || ':' || $2::text, 0))`, [
      workflowId,
      key,
    ]);
  }

  async admit(workflowId: string, key: string, limit: number): Promise<{ admitted: AdmittedRun[]; free: number }> {
    // One statement (it runs under the claim, which every end of a run of the key waits for).
    const rows = await this.query<{ held: number; id: string | null; organization_id: string; job_id: string; timeout_ms: number }>(
      `WITH held AS (
         SELECT count(*)::int AS n FROM workflow_runs WHERE ${HOLDS_PLACE}
       ), next AS (
         SELECT id FROM workflow_runs WHERE workflow_id = $1 AND concurrency_key = $2 AND status = 'queued' AND waits_for_place
         ORDER BY created_at, id LIMIT GREATEST($3 - (SELECT n FROM held), 0) FOR UPDATE
       ), admitted AS (
         UPDATE workflow_runs r SET waits_for_place = false, job_id = gen_random_uuid()
         FROM next WHERE r.id = next.id AND r.status = 'queued' RETURNING r.id, r.organization_id, r.job_id, r.timeout_ms, r.created_at
       ) SELECT (SELECT n FROM held) AS held, a.* FROM (SELECT 1) one LEFT JOIN admitted a ON true ORDER BY a.created_at, a.id`,
      [workflowId, key, limit],
    );
    const admitted = rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: r.id!, organizationId: r.organization_id, jobId: r.job_id, timeoutMs: r.timeout_ms }));
    return { admitted, free: Math.max(0, limit - rows[0].held - admitted.length) };
  }

  async oldestHolder(workflowId: string, key: string): Promise<{ id: string; organizationId: string } | null> {
    // SKIP LOCKED: a run being ended now holds its row and waits for the claim this transaction has.
    const [row] = await this.query<{ id: string; organization_id: string }>(
      `SELECT id, organization_id FROM workflow_runs WHERE ${HOLDS_PLACE} ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [workflowId, key],
    );
    return row ? { id: row.id, organizationId: row.organization_id } : null;
  }

  async waitingKeys(olderThanMs: number): Promise<WaitingKey[]> {
    const rows = await this.query<{ workflow_id: string; concurrency_key: string; concurrency_limit: number }>(
      `SELECT w.* FROM (
         SELECT DISTINCT ON (workflow_id, concurrency_key) workflow_id, concurrency_key, concurrency_limit FROM workflow_runs
         WHERE concurrency_key IS NOT NULL AND status = 'queued' AND waits_for_place AND created_at < now() - make_interval(secs => $1::double precision / 1000)
         ORDER BY workflow_id, concurrency_key, created_at
       ) w
       WHERE (SELECT count(*) FROM workflow_runs h
              WHERE h.workflow_id = w.workflow_id AND h.concurrency_key = w.concurrency_key
                AND h.status IN ('queued', 'running', 'waiting') AND NOT h.waits_for_place) < w.concurrency_limit
       LIMIT 100`,
      [olderThanMs],
    );
    return rows.map((r) => ({ workflowId: r.workflow_id, key: r.concurrency_key, limit: r.concurrency_limit }));
  }

  private async withSteps(rows: RawRun[]): Promise<Run[]> {
    if (!rows.length) return [];
    const steps = await this.query<RawStep>('SELECT * FROM workflow_run_steps WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, position', [
      rows.map((r) => r.id),
    ]);
    const byRun = new Map<string, StepRun[]>();
    for (const s of steps) {
      const list = byRun.get(s.run_id) ?? [];
      list.push(toStep(s));
      byRun.set(s.run_id, list);
    }
    return rows.map((r) => toRun(r, byRun.get(r.id) ?? []));
  }

  private query<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}

const json = (value: unknown): string => JSON.stringify(value ?? null);

/**
 * One statement for runs and their steps: one round trip for every batch of runs started.
 * Steps are pending unless recorded already (those a retry keeps, taken over as they were).
 * A JSON null in a recordset is SQL NULL: an input that is null is stored as the JSON null it was.
 */
function insertRuns(runs: Run[]): Statement {
  return {
    sql: `WITH runs AS (
       INSERT INTO workflow_runs (id, organization_id, workflow_id, workflow_version, status, input, attempts, job_id, timeout_ms, triggered_by,
         created_at, parent_run_id, depth, retry_of, concurrency_key, concurrency_limit, waits_for_place)
       SELECT id, organization_id, workflow_id, workflow_version, status, COALESCE(input, 'null'::jsonb), 0, job_id, timeout_ms, triggered_by,
         created_at, parent_run_id, depth, retry_of, concurrency_key, concurrency_limit, waits_for_place
       FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, organization_id uuid, workflow_id uuid, workflow_version int, status text, input jsonb,
         job_id uuid, timeout_ms int, triggered_by jsonb, created_at timestamptz, parent_run_id uuid, depth int, retry_of uuid,
         concurrency_key text, concurrency_limit int, waits_for_place boolean)
       RETURNING id)
     INSERT INTO workflow_run_steps (run_id, step_id, position, status, attempts, input, output, error, execution_id, reason, child_run_id, started_at, finished_at)
     SELECT s.run_id, s.step_id, s.position, COALESCE(s.status, 'pending'), COALESCE(s.attempts, 0), s.input, s.output,
            NULLIF(s.error, 'null'::jsonb), s.execution_id, s.reason, s.child_run_id, s.started_at, s.finished_at
     FROM jsonb_to_recordset($2::jsonb) AS s(run_id uuid, step_id text, position int, status text, attempts int, input jsonb, output jsonb,
       error jsonb, execution_id uuid, reason text, child_run_id uuid, started_at timestamptz, finished_at timestamptz)
     JOIN runs ON runs.id = s.run_id`,
    params: [
      JSON.stringify(
        runs.map((run) => ({
          id: run.id,
          organization_id: run.organizationId,
          workflow_id: run.workflowId,
          workflow_version: run.workflowVersion,
          status: run.status,
          input: run.input ?? null,
          job_id: run.jobId,
          timeout_ms: run.timeoutMs,
          triggered_by: run.triggeredBy,
          created_at: run.createdAt,
          parent_run_id: run.parentRunId,
          depth: run.depth,
          retry_of: run.retryOf,
          concurrency_key: run.concurrency?.key ?? null,
          concurrency_limit: run.concurrency?.limit ?? null,
          waits_for_place: run.concurrency?.waitsForPlace ?? false,
        })),
      ),
      JSON.stringify(
        runs.flatMap((run) =>
          run.steps.map((s, position) =>
            s.status === 'pending'
              ? { run_id: run.id, step_id: s.id, position }
              : {
                  run_id: run.id,
                  step_id: s.id,
                  position,
                  status: s.status,
                  attempts: s.attempts,
                  input: s.input,
                  output: s.output,
                  error: s.error,
                  execution_id: s.executionId,
                  reason: s.reason,
                  child_run_id: s.childRunId,
                  started_at: s.startedAt,
                  finished_at: s.finishedAt,
                },
          ),
        ),
      ),
    ],
  };
}

/** A step row as `json_agg` gives it: its times back to dates. */
function fromJsonRow(row: Record<keyof RawStep, unknown>): RawStep {
  const date = (value: unknown) => (typeof value === 'string' ? new Date(value) : null);
  return {
    ...(row as unknown as RawStep),
    resume_at: date(row.resume_at),
    started_at: date(row.started_at),
    finished_at: date(row.finished_at),
  };
}

function toRun(row: RawRun, steps: StepRun[]): Run {
  return {
    id: row.id,
    organizationId: row.organization_id,
    workflowId: row.workflow_id,
    workflowVersion: row.workflow_version,
    status: row.status,
    input: row.input,
    output: row.output,
    error: row.error,
    attempts: row.attempts,
    jobId: row.job_id,
    timeoutMs: row.timeout_ms,
    triggeredBy: row.triggered_by,
    parentRunId: row.parent_run_id,
    depth: row.depth,
    retryOf: row.retry_of,
    retriedBy: row.retried_by,
    concurrency:
      row.concurrency_key === null ? null : { key: row.concurrency_key, limit: row.concurrency_limit!, waitsForPlace: row.waits_for_place },
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    steps,
  };
}

function toStep(row: RawStep): StepRun {
  return {
    id: row.step_id,
    status: row.status,
    attempts: row.attempts,
    input: row.input,
    output: row.output,
    error: row.error,
    executionId: row.execution_id,
    resumeAt: row.resume_at,
    reason: row.reason,
    childRunId: row.child_run_id,
    waitingFor: row.waiting_for,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}
