import { DataSource } from 'typeorm';
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

/** Polls an execution until it is final (or the deadline passes) and answers its last state. */
export async function settled(t: TestApp, org: TestOrg, agentId: string, executionId: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.http().get(`/api/agents/${agentId}/history/${executionId}`).set(bearer(org.viewer));
    if (!['queued', 'running'].includes(res.body.status) || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The engine's invariant: every unfinished execution has a live queue job (queued, waiting
 * to retry or held by a worker). Answers the ids that break it.
 */
export async function executionsWithoutLiveJob(dataSource: DataSource): Promise<string[]> {
  const rows = await dataSource.query<Array<{ id: string }>>(
    `SELECT e.id FROM agent_executions e
     WHERE e.status IN ('queued', 'running') AND e.triggered_by->>'type' = 'user'
       AND NOT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.id = e.job_id AND j.state IN ('created', 'retry', 'active'))`,
  );
  return rows.map((r) => r.id);
}
