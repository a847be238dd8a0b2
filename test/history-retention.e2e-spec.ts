import { DataSource } from 'typeorm';
import { HistoryPartitions, partitionName, periodStart } from '../src/database/history-partitions';
import { HistoryRetention } from '../src/modules/organizations/infrastructure/history-retention';
import { timeOrderedId } from '../src/shared/ids/time-ordered-id';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

/**
 * Executions and runs are kept in week partitions and leave by whole weeks: a week's partition
 * (with its steps') is dropped once it ended more than the retention ago, while keyset pages
 * read on across the gap. The instance's HISTORY_RETENTION_DAYS caps every organization's.
 */
jest.setTimeout(120_000);

const DAY_MS = 86_400_000;
const CAP_DAYS = 30;

describe('history retention', () => {
  let t: TestApp;
  let org: TestOrg;
  let operator: TestUser;
  let db: DataSource;
  let partitions: HistoryPartitions;
  const now = Date.now();
  const daysAgo = (days: number) => now - days * DAY_MS;

  beforeAll(async () => {
    t = await createTestApp({ env: { HISTORY_RETENTION_DAYS: String(CAP_DAYS) } });
    db = t.app.get(DataSource);
    partitions = t.app.get(HistoryPartitions);
    org = await t.newOrg('enterprise');
    operator = await t.addUser(org.id, 'admin', { isOperator: true });
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  /** A copy of a stored row, made `at` (its id and created_at), as if written then. */
  async function copyAt(table: string, id: string, at: number): Promise<string> {
    const copy = timeOrderedId(at);
    await db.query(
      `INSERT INTO ${table} SELECT (jsonb_populate_record(NULL::${table}, to_jsonb(r) || jsonb_build_object('id', $2::text, 'created_at', $3::timestamptz))).*
         FROM ${table} r WHERE id = $1`,
      [id, copy, new Date(at)],
    );
    return copy;
  }

  it("caps an organization's retention by the instance's: a longer one is refused, and no organization keeps more", async () => {
    const tooLong = await t
      .http()
      .patch(`/api/organizations/${org.id}`)
      .set(bearer(operator))
      .send({ historyRetentionDays: CAP_DAYS + 1 });
    expectError(tooLong, 400, 'VALIDATION_FAILED');
    expect(tooLong.body.error.message).toContain(`at most ${CAP_DAYS} days`);

    const set = await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ historyRetentionDays: 20 });
    expect(set.status).toBe(200);
    expect(set.body.historyRetentionDays).toBe(20);
    expect((await t.http().get(`/api/organizations/${org.id}`).set(bearer(operator))).body.historyRetentionDays).toBe(20);
    // Enterprise organizations default to 90 days; the instance keeps 30 at most.
    expect(await t.app.get(HistoryRetention).longestDays()).toBe(CAP_DAYS);

    const reset = await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ historyRetentionDays: null });
    expect(reset.body.historyRetentionDays).toBeNull();
    // Only operators set it.
    expectError(await t.http().patch(`/api/organizations/${org.id}`).set(bearer(org.admin)).send({ historyRetentionDays: 5 }), 403, 'FORBIDDEN');
  });

  it('drops the partitions of weeks past the retention with their parts, and pages read on across the gap', async () => {
    // Three executions of today, three of 10 days ago, three of 40 days ago (past the 30 kept).
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'n * 2' } });
    const today: string[] = [];
    for (const n of [1, 2, 3]) {
      const res = await t.http().post(`/api/agents/${agentId}/execute?wait=10`).set(bearer(org.member)).send({ input: { n } });
      expect(res.body).toMatchObject({ status: 'succeeded', output: n * 2 });
      today.push(res.body.id);
    }
    await partitions.ensure(new Date(daysAgo(40)));
    await partitions.ensure(new Date(daysAgo(10)));
    const recent = [await copyAt('agent_executions', today[0], daysAgo(10) + 3), await copyAt('agent_executions', today[1], daysAgo(10) + 2)];
    recent.push(await copyAt('agent_executions', today[2], daysAgo(10) + 1));
    const old = [await copyAt('agent_executions', today[0], daysAgo(40) + 3), await copyAt('agent_executions', today[1], daysAgo(40) + 2)];
    old.push(await copyAt('agent_executions', today[2], daysAgo(40) + 1));

    // A run of 40 days ago with its steps: they go together.
    const workflow = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'kept', steps: [{ id: 'double', action: 'transform.jsonata', with: { expression: 'n * 2' } }] });
    expect(workflow.status).toBe(201);
    const run = await t.http().post(`/api/workflows/${workflow.body.id}/run?wait=10`).set(bearer(org.member)).send({ input: { n: 4 } });
    expect(run.body).toMatchObject({ status: 'succeeded' });
    const oldRun = await copyAt('workflow_runs', run.body.id, daysAgo(40));
    await db.query(
      `INSERT INTO workflow_run_steps SELECT (jsonb_populate_record(NULL::workflow_run_steps, to_jsonb(s) || jsonb_build_object('run_id', $2::text))).*
         FROM workflow_run_steps s WHERE run_id = $1`,
      [run.body.id, oldRun],
    );
    const oldWeek = periodStart(daysAgo(40));
    const where = async (table: string, ids: string[]) =>
      (await db.query(`SELECT DISTINCT tableoid::regclass::text AS name FROM ${table} WHERE id = ANY($1)`, [ids])).map(
        (r: { name: string }) => r.name,
      );
    expect(await where('agent_executions', old)).toEqual([partitionName('agent_executions', oldWeek)]);
    expect(await where('workflow_runs', [oldRun])).toEqual([partitionName('workflow_runs', oldWeek)]);
    const stepsOf = async (runId: string) =>
      Number((await db.query(`SELECT count(*) AS n FROM workflow_run_steps WHERE run_id = $1`, [runId]))[0].n);
    expect(await stepsOf(oldRun)).toBe(1);

    // A client pages through the history (newest first) while the old days are dropped.
    const page = (cursor?: string) =>
      t
        .http()
        .get(`/api/agents/${agentId}/history`)
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set(bearer(org.viewer));
    const first = await page();
    expect(first.status).toBe(200);
    const seen: string[] = first.body.data.map((e: { id: string }) => e.id);
    let cursor: string | undefined = first.body.nextCursor;
    const second = await page(cursor);
    seen.push(...second.body.data.map((e: { id: string }) => e.id));
    cursor = second.body.nextCursor;

    const pass = await partitions.pass(new Date(now));
    for (const table of ['agent_executions', 'agent_execution_steps', 'workflow_runs', 'workflow_run_steps', 'workflow_run_items', 'workflow_run_waits']) {
      expect(await partitionNames(table)).not.toContain(partitionName(table, oldWeek));
    }
    expect(pass.dropped).toContain(partitionName('agent_executions', oldWeek));
    expect(pass.dropped).toContain(partitionName('workflow_runs', oldWeek));
    // The days kept are still there.
    expect(await partitionNames('agent_executions')).toContain(partitionName('agent_executions', periodStart(daysAgo(10))));

    while (cursor) {
      const next = await page(cursor);
      expect(next.status).toBe(200);
      seen.push(...next.body.data.map((e: { id: string }) => e.id));
      cursor = next.body.nextCursor;
    }
    expect(seen).toEqual([...today].reverse().concat(recent));
    // The old records are gone, their steps with them; the recent ones are found.
    expectError(await t.http().get(`/api/agents/${agentId}/history/${old[0]}`).set(bearer(org.viewer)), 404, 'EXECUTION_NOT_FOUND');
    expect((await t.http().get(`/api/agents/${agentId}/history/${recent[0]}`).set(bearer(org.viewer))).status).toBe(200);
    expectError(await t.http().get(`/api/workflows/${workflow.body.id}/runs/${oldRun}`).set(bearer(org.viewer)), 404, 'RUN_NOT_FOUND');
    expect(await stepsOf(oldRun)).toBe(0);
    expect((await db.query(`SELECT count(*) AS n FROM agent_executions WHERE id = ANY($1)`, [old]))[0].n).toBe('0');
  });

  it('deletes what the default partition holds from before the retention: records written before the tables were partitioned', async () => {
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'n' } });
    const res = await t.http().post(`/api/agents/${agentId}/execute?wait=10`).set(bearer(org.member)).send({ input: { n: 1 } });
    expect(res.body.status).toBe('succeeded');
    // Random ids, as before partitioning: no week's partition takes them.
    const legacy = async (age: number) => {
      const [{ id }] = await db.query(
        `INSERT INTO agent_executions SELECT (jsonb_populate_record(NULL::agent_executions, to_jsonb(r) || jsonb_build_object('id', gen_random_uuid()::text, 'created_at', $2::timestamptz))).*
           FROM agent_executions r WHERE id = $1 RETURNING id`,
        [res.body.id, new Date(daysAgo(age))],
      );
      return id as string;
    };
    const expired = await legacy(CAP_DAYS + 5);
    const kept = await legacy(CAP_DAYS - 5);
    expect(await inDefault([expired, kept])).toBe(2);

    const pass = await partitions.pass(new Date(now));
    expect(pass.deleted).toBeGreaterThanOrEqual(1);
    expectError(await t.http().get(`/api/agents/${agentId}/history/${expired}`).set(bearer(org.viewer)), 404, 'EXECUTION_NOT_FOUND');
    expect((await t.http().get(`/api/agents/${agentId}/history/${kept}`).set(bearer(org.viewer))).body.id).toBe(kept);
  });

  it("takes over the rows its week had in the default partition when the week's partition is made", async () => {
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'n' } });
    const res = await t.http().post(`/api/agents/${agentId}/execute?wait=10`).set(bearer(org.member)).send({ input: { n: 1 } });
    // A record of a week with no partition yet (ahead of those made) lands in the default partition.
    const ahead = now + 20 * DAY_MS;
    const early = await copyAt('agent_executions', res.body.id, ahead);
    expect(await inDefault([early])).toBe(1);
    const created = await partitions.ensure(new Date(ahead));
    expect(created).toContain(partitionName('agent_executions', periodStart(ahead)));
    expect(await inDefault([early])).toBe(0);
    expect((await t.http().get(`/api/agents/${agentId}/history/${early}`).set(bearer(org.viewer))).body.id).toBe(early);
  });

  const partitionNames = async (table: string) => (await partitions.partitions(table)).map((p) => p.name);
  const inDefault = async (ids: string[]) =>
    Number((await db.query(`SELECT count(*) AS n FROM agent_executions_default WHERE id = ANY($1)`, [ids]))[0].n);
});
