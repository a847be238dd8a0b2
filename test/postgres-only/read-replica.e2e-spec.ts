import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { runMigrationsLocked } from '../../src/database/migrator';
import { install, registerAgent } from '../support/agents';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';
import { Receiver } from '../support/webhook-receiver';
import { hubSignature, jsonata } from '../triggers/support';

/**
 * DATABASE_READ_URL: the history lists read from the replica, everything else from the primary.
 * The "replica" is a second database on the same server with the same migrations, filled by
 * hand: until the test copies the primary's rows into it, it lags behind by everything, so a
 * list shows what the replica has and a read by id what the primary has.
 */
jest.setTimeout(120_000);

/** The history tables the routed lists read, and nothing the service ever writes to on the replica. */
const HISTORY = ['agent_executions', 'workflow_runs', 'workflow_trigger_events', 'webhook_messages'] as const;
/** Tables every request writes to, or reads configuration from (they stay on the primary). */
const PRIMARY_ONLY = ['organizations', 'users', 'agents', 'workflows', 'workflow_triggers', 'webhook_endpoints'] as const;

describe('read replica (DATABASE_READ_URL)', () => {
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const name = `platform_replica_${process.pid}_${randomBytes(3).toString('hex')}`;
  const replicaUrl = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  let replica: Client;
  let primary: DataSource;
  let receiver: Receiver;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    // The replica has the primary's schema (by replication, in production): the same migrations.
    const migrate = new DataSource(dataSourceOptions(replicaUrl, 2));
    await migrate.initialize();
    await runMigrationsLocked(migrate).finally(() => migrate.destroy());
    replica = new Client({ connectionString: replicaUrl });
    await replica.connect();

    receiver = new Receiver();
    await receiver.start();
    t = await createTestApp({ env: { DATABASE_READ_URL: replicaUrl, OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    primary = t.app.get(DataSource);
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await replica?.end();
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  const get = async (path: string) => {
    const res = await t.http().get(path).set(bearer(org.viewer));
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return res.body as { id?: string; data?: Array<{ id: string }> };
  };
  const listed = async (path: string) => ((await get(path)).data ?? []).map((item) => item.id);
  const post = async (path: string, body: object, expected = 200, headers: Record<string, string> = {}) => {
    const res = await t.http().post(path).set(bearer(org.admin)).set(headers).send(body);
    expect({ path, status: res.status, body: res.body as unknown }).toEqual({ path, status: expected, body: expect.anything() });
    return res.body as Record<string, string>;
  };
  const replicaCount = async (table: string) => Number((await replica.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  /** Row counts of the replica's `tables`, one query after the other on its one client. */
  const replicaCounts = async (tables: readonly string[]) => {
    const counts: Record<string, number> = {};
    for (const table of tables) counts[table] = await replicaCount(table);
    return counts;
  };

  /**
   * What replication would bring: the organization's rows of `table`, copied from the primary as
   * they are. The session acts as a replication applier does (no triggers, so no foreign keys):
   * the replica need not hold the agents, workflows and endpoints the history rows point to.
   */
  const replicate = async (table: string) => {
    const rows = await primary.query<Array<{ row: unknown }>>(`SELECT to_jsonb(t) AS row FROM ${table} t WHERE organization_id = $1`, [
      org.id,
    ]);
    await replica.query('BEGIN');
    try {
      await replica.query(`SET LOCAL session_replication_role = replica`);
      await replica.query(`INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(NULL::${table}, $1::jsonb) ON CONFLICT DO NOTHING`, [
        JSON.stringify(rows.map((r) => r.row)),
      ]);
      await replica.query('COMMIT');
    } catch (error) {
      await replica.query('ROLLBACK');
      throw error;
    }
    return rows.length;
  };

  it('reads the history lists from the replica and every record by id, every write and the configuration lists from the primary', async () => {
    // An execution, a run, a trigger event (and the run it started) and a webhook message, all written now.
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'n * 2' } });
    const execution = await post(`/api/agents/${agentId}/execute?wait=15`, { input: { n: 21 } });
    expect(execution).toMatchObject({ status: 'succeeded', output: 42 });

    const workflow = await post(
      '/api/workflows',
      { name: 'double', steps: [{ id: 'double', ...jsonata('n * 2') }], output: 'steps.double.output' },
      201,
    );
    const run = await post(`/api/workflows/${workflow.id}/run?wait=15`, { input: { n: 2 } });
    expect(run).toMatchObject({ status: 'succeeded', output: 4 });

    const trigger = await post(`/api/workflows/${workflow.id}/triggers`, { scheme: 'hmac-sha256' }, 201);
    const payload = JSON.stringify({ n: 5 });
    const hooked = await t
      .http()
      .post(`/api/hooks/${trigger.id}`)
      .set({ 'Content-Type': 'application/json', 'X-Hub-Signature-256': hubSignature(trigger.secret, payload) })
      .send(payload);
    expect(hooked.status).toBe(202);
    const { eventId, runId: hookRunId } = hooked.body as { eventId: string; runId: string };

    const endpoint = await post('/api/webhooks', { url: receiver.url('/replica'), eventTypes: ['webhook.test'] }, 201);
    const { messageId } = await post(`/api/webhooks/${endpoint.id}/test`, {});

    // Nothing of it reached the replica: the service never writes there.
    expect(await replicaCounts([...HISTORY, ...PRIMARY_ONLY])).toEqual(
      Object.fromEntries([...HISTORY, ...PRIMARY_ONLY].map((table) => [table, 0])),
    );

    // Each one by id: from the primary, found.
    expect((await get(`/api/agents/${agentId}/history/${execution.id}`)).id).toBe(execution.id);
    expect((await get(`/api/workflows/${workflow.id}/runs/${run.id}`)).id).toBe(run.id);
    expect((await get(`/api/workflows/${workflow.id}/triggers/${trigger.id}/events/${eventId}`)).id).toBe(eventId);
    expect((await get(`/api/webhooks/${endpoint.id}/deliveries/${messageId}`)).id).toBe(messageId);
    // The configuration lists read the primary too: what was just made is there.
    expect(await listed('/api/agents')).toContain(agentId);
    expect(await listed('/api/workflows')).toContain(workflow.id);
    expect(await listed(`/api/workflows/${workflow.id}/triggers`)).toContain(trigger.id);
    expect(await listed('/api/webhooks')).toContain(endpoint.id);

    // The history lists read the replica, which has none of it yet.
    const histories = {
      agentHistory: `/api/agents/${agentId}/history`,
      executions: `/api/executions?agentId=${agentId}`,
      workflowRuns: `/api/workflows/${workflow.id}/runs`,
      runs: `/api/runs?workflowId=${workflow.id}`,
      triggerEvents: `/api/workflows/${workflow.id}/triggers/${trigger.id}/events`,
      deliveries: `/api/webhooks/${endpoint.id}/deliveries`,
    };
    const lists = async () =>
      Object.fromEntries(await Promise.all(Object.entries(histories).map(async ([key, path]) => [key, await listed(path)] as const)));
    expect(await lists()).toEqual({ agentHistory: [], executions: [], workflowRuns: [], runs: [], triggerEvents: [], deliveries: [] });
    const readers = await replica.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'platform-read'`,
      [name],
    );
    expect(Number(readers.rows[0].n)).toBeGreaterThan(0);

    // Replication catches up: the lists show what the replica now has.
    for (const table of HISTORY) expect(await replicate(table)).toBeGreaterThan(0);
    expect(await lists()).toEqual({
      agentHistory: [execution.id],
      executions: [execution.id],
      workflowRuns: expect.arrayContaining([run.id, hookRunId]),
      runs: expect.arrayContaining([run.id, hookRunId]),
      triggerEvents: [eventId],
      deliveries: [messageId],
    });

    // A new execution again: written to the primary only, found by id, not listed until replicated.
    const before = await replicaCounts(HISTORY);
    const second = await post(`/api/agents/${agentId}/execute?wait=15`, { input: { n: 1 } });
    expect((await get(`/api/agents/${agentId}/history/${second.id}`)).id).toBe(second.id);
    expect(await listed(histories.agentHistory)).toEqual([execution.id]);
    expect(await replicaCounts(HISTORY)).toEqual(before);
    expect(await replicaCounts(PRIMARY_ONLY)).toEqual(Object.fromEntries(PRIMARY_ONLY.map((table) => [table, 0])));
  });
});
