import { DataSource } from 'typeorm';
import { eventually } from './eventually';
import { bearer, TestApp, TestOrg } from './test-app';

/** Helpers for specs that register and execute agents. */
export async function install(t: TestApp, org: TestOrg, slug: string, config: Record<string, unknown> = {}): Promise<void> {
  const res = await t.http().post(`/api/plugins/${slug}/install`).set(bearer(org.admin)).send({ config });
  if (res.status !== 201 && res.status !== 200) throw new Error(`install ${slug}: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function registerAgent(t: TestApp, org: TestOrg, body: Record<string, unknown>): Promise<string> {
  const res = await t
    .http()
    .post('/api/agents')
    .set(bearer(org.admin))
    .send({ name: 'agent', ...body });
  if (res.status !== 201) throw new Error(`register agent: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** Polls an execution until it is final and answers it; throws if it is still queued or running after `timeoutMs`. */
export async function settled(t: TestApp, org: TestOrg, agentId: string, executionId: string, timeoutMs = 20_000) {
  let status: unknown;
  return eventually(
    async () => {
      const res = await t.http().get(`/api/agents/${agentId}/history/${executionId}`).set(bearer(org.viewer));
      status = res.body.status;
      return ['queued', 'running'].includes(res.body.status) ? undefined : res.body;
    },
    { timeoutMs, intervalMs: 100, message: () => `execution ${executionId} to finish (still ${status})` },
  );
}

/**
 * The engine's invariant: every unfinished execution has a live queue job (queued, waiting
 * to retry or held by a worker). Answers the ids of one organization's executions that break
 * it; the organization keeps the check to this test's rows, as other files share the database
 * and some of them leave broken rows on purpose for the reconciler.
 */
export async function executionsWithoutLiveJob(dataSource: DataSource, organizationId: string): Promise<string[]> {
  const rows = await dataSource.query<Array<{ id: string }>>(
    `SELECT e.id FROM agent_executions e
     WHERE e.organization_id = $1 AND e.status IN ('queued', 'running') AND e.triggered_by->>'type' = 'user'
       AND NOT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.id = e.job_id AND j.state IN ('created', 'retry', 'active'))`,
    [organizationId],
  );
  return rows.map((r) => r.id);
}
