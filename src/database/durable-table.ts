import { JobRef } from '../shared/jobs/job-ref';
import { Statement } from '../shared/jobs/statement';

/** Runs one statement in the caller's transaction and answers its rows. */
export type Query = <T>(sql: string, params: unknown[]) => Promise<T[]>;

/** A statement's rows through TypeORM, whose `query` answers an UPDATE ... RETURNING as `[rows, count]`. */
export async function rowsOf<T>(
  manager: { query(sql: string, params: unknown[]): Promise<unknown> },
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const result = (await manager.query(sql, params)) as unknown[];
  return (Array.isArray(result[0]) ? result[0] : result) as T[];
}

/**
 * `main` with `alongside` run in the same statement, as its first CTE (`name`), so both commit
 * together without a transaction around them: one round trip. `main` may begin with a WITH of
 * its own; the placeholders of `alongside` are moved past those of `main`.
 */
export function withAlongside(name: string, main: Statement, alongside: Statement): Statement {
  const offset = main.params.length;
  const placeholders = alongside.sql.match(/\$\d+\b/g) ?? [];
  if (new Set(placeholders).size !== alongside.params.length)
    throw new Error(
      `A statement to run alongside has ${new Set(placeholders).size} placeholders for ${alongside.params.length} parameters`,
    );
  const moved = alongside.sql.replace(/\$(\d+)\b/g, (_, n: string) => `$${Number(n) + offset}`);
  const rest = main.sql.trimStart();
  const sql = /^WITH\s/i.test(rest) ? `WITH ${name} AS (${moved}), ${rest.slice(5)}` : `WITH ${name} AS (${moved}) ${rest}`;
  return { sql, params: [...main.params, ...alongside.params] };
}

/** On a job, or due to be: the records the reconciler keeps moving (and the predicate of each table's partial index). */
export const ON_A_JOB = `status IN ('queued', 'running')`;

/**
 * The SQL of the contract every table of durable records keeps (executions, runs, webhook
 * messages): `id`, `organization_id`, `status`, `attempts`, `job_id`, `created_at`. Its guards
 * are written once here: a record is started only by the job it is on, moved or failed by the
 * reconciler only while it is still on the job it found it on, and "unfinished" means one thing.
 */
export class DurableTable {
  /** Not final: a cancel, a start or a resume may still take it. */
  readonly unfinished: string;

  /**
   * @param table the table's name
   * @param idType the SQL type of its ids
   * @param waits whether its records may be `waiting` (parked until a later job)
   */
  constructor(
    readonly table: string,
    private readonly idType: 'uuid' | 'text',
    waits = false,
  ) {
    this.unfinished = waits ? `status IN ('queued', 'running', 'waiting')` : ON_A_JOB;
  }

  /**
   * The guard of a start (`$1` ids, `$2` job ids: `startParams`): unfinished, and on the job that
   * asks. `id = ANY($1)` besides the pairs: the planner prunes a partitioned table's partitions
   * by it, not by the pairs' subquery.
   */
  startedBy(alias = ''): string {
    const a = alias ? `${alias}.` : '';
    return `(${a}id, ${a}job_id) IN (SELECT * FROM unnest($1::${this.idType}[], $2::uuid[])) AND ${a}id = ANY($1::${this.idType}[]) AND ${a}${this.unfinished}`;
  }

  startParams(jobs: JobRef[]): [string[], string[]] {
    return [jobs.map((j) => j.id), jobs.map((j) => j.jobId)];
  }

  /** The guard of the reconciler's changes (`$1` id, `$2` the job it found the record on): still there, and on a job. */
  readonly onItsJob = `id = $1 AND job_id IS NOT DISTINCT FROM $2 AND ${ON_A_JOB}`;

  /**
   * Records on a job created more than `olderThanMs` ago, oldest first, with `columns` (of the
   * table as `t`, and of what `join` adds); `where` narrows them further.
   */
  unfinishedOnJobs<T>(
    query: Query,
    olderThanMs: number,
    limit: number,
    select: { columns: string; join?: string; where?: string },
  ): Promise<T[]> {
    return query<T>(
      `SELECT ${select.columns} FROM ${this.table} t ${select.join ?? ''}
       WHERE t.${ON_A_JOB} AND t.created_at < now() - make_interval(secs => $1::double precision / 1000) ${select.where ? `AND ${select.where}` : ''}
       ORDER BY t.created_at LIMIT $2`,
      [olderThanMs, limit],
    );
  }

  /** Points a record still on `fromJobId` at `toJobId` (`set` adds to the change); true when it did. */
  async moveToJob(query: Query, id: string, fromJobId: string | null, toJobId: string, set = ''): Promise<boolean> {
    const rows = await query(
      `WITH moved AS (UPDATE ${this.table} SET job_id = $3${set ? `, ${set}` : ''} WHERE ${this.onItsJob} RETURNING id) SELECT * FROM moved`,
      [id, fromJobId, toJobId],
    );
    return rows.length > 0;
  }
}
