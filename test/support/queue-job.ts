import { DataSource } from 'typeorm';
import { eventually } from './eventually';
import { TestApp } from './test-app';

/** Tables whose rows name the queue job that works them (`job_id`). */
export type JobOwner = 'workflow_runs' | 'agent_executions';

/**
 * Waits until the worker is done with the job of row `id` in `owner`: the job is no longer
 * queued, waiting to retry or held by a worker (a completed job is deleted from the queue).
 */
export async function untilJobDone(t: TestApp, owner: JobOwner, id: string): Promise<void> {
  let seen: unknown;
  await eventually(
    async () => {
      const [row] = await t.app
        .get(DataSource)
        .query<Array<{ state: string | null }>>(
          `SELECT j.state FROM ${owner} o LEFT JOIN pgboss.job j ON j.id = o.job_id WHERE o.id = $1`,
          [id],
        );
      seen = row?.state;
      return row && !['created', 'retry', 'active'].includes(row.state ?? '');
    },
    { timeoutMs: 10_000, intervalMs: 20, message: () => `the job of ${owner} ${id} to be done (still ${String(seen)})` },
  );
}
