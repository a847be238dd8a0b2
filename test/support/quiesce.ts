import type { DataSource } from 'typeorm';

/**
 * Leaves no work of these organizations to the spec files that follow. They share the
 * database, and each file's app works whatever is queued or due in it: a flood left behind
 * (hundreds of every-minute schedules, thousands of queued executions, messages to receivers
 * that are gone) would take that app's database connections from the requests its own tests
 * make. Schedules are switched off, endpoints disabled, and unfinished executions and runs
 * (waiting ones too) canceled (messages skipped), as an operator cleaning up would; their jobs
 * then find nothing to start.
 */
export async function quiesce(db: DataSource, organizationIds: string[]): Promise<void> {
  const orgs = [organizationIds];
  const statements = [
    `UPDATE workflow_schedules SET enabled = false, next_fire_at = NULL WHERE organization_id = ANY($1)`,
    `UPDATE webhook_endpoints SET enabled = false WHERE organization_id = ANY($1)`,
    ...['agent_executions', 'workflow_runs'].map(
      (table) =>
        `UPDATE ${table} SET status = 'canceled', finished_at = now() WHERE organization_id = ANY($1) AND status IN ('queued', 'running', 'waiting')`,
    ),
    `UPDATE webhook_messages SET status = 'skipped', finished_at = now() WHERE organization_id = ANY($1) AND status IN ('queued', 'running')`,
  ];
  for (const sql of statements) await untilNoDeadlock(() => db.query(sql, orgs));
}

/**
 * The app's workers still change these rows, each transaction in its own order: one sweeping
 * statement can deadlock with them, and PostgreSQL aborts one side. The sweep is tried again.
 */
async function untilNoDeadlock(statement: () => Promise<unknown>): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await statement();
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || tries >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * tries));
    }
  }
}
