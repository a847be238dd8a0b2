import type { DataSource } from 'typeorm';

/**
 * Leaves no work of these organizations to the spec files that follow. They share the
 * database, and each file's app works whatever is queued or due in it: a flood left behind
 * (hundreds of every-minute schedules, thousands of queued executions, messages to receivers
 * that are gone) would take that app's database connections from the requests its own tests
 * make. Schedules are switched off, endpoints disabled, and unfinished executions and runs
 * canceled (messages skipped), as an operator cleaning up would; their jobs then find
 * nothing to start.
 */
export async function quiesce(db: DataSource, organizationIds: string[]): Promise<void> {
  const orgs = [organizationIds];
  await db.query(`UPDATE workflow_schedules SET enabled = false, next_fire_at = NULL WHERE organization_id = ANY($1)`, orgs);
  await db.query(`UPDATE webhook_endpoints SET enabled = false WHERE organization_id = ANY($1)`, orgs);
  for (const table of ['agent_executions', 'workflow_runs']) {
    await db.query(
      `UPDATE ${table} SET status = 'canceled', finished_at = now() WHERE organization_id = ANY($1) AND status IN ('queued', 'running')`,
      orgs,
    );
  }
  await db.query(
    `UPDATE webhook_messages SET status = 'skipped', finished_at = now() WHERE organization_id = ANY($1) AND status IN ('queued', 'running')`,
    orgs,
  );
}
