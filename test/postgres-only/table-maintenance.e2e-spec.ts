import { DataSource } from 'typeorm';
import { partitionName, periodStart } from '../../src/database/history-partitions';
import { HOT_TABLE_AUTOVACUUM, TableMaintenance } from '../../src/database/table-maintenance';
import { ExecutionsService } from '../../src/modules/agents/application/executions.service';
import { FINISHED_JOB_SECONDS } from '../../src/queue/job-queue';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * The hot tables stay small and vacuumed without a DBA (the machines here run Postgres with
 * autovacuum off): the queue's table keeps only jobs in flight, and the workers' maintenance
 * pass vacuums what churns and gives it autovacuum settings of its own.
 */
jest.setTimeout(180_000);

const EXECUTIONS = 10_000;
const CONCURRENT = 50;

describe('steady tables', () => {
  let t: TestApp;
  let org: TestOrg;
  let db: DataSource;

  beforeAll(async () => {
    // The pass is called by the test, not by the timer.
    t = await createTestApp({ env: { DB_VACUUM_INTERVAL_SECONDS: '0', WORKER_CONCURRENCY: '16' } });
    db = t.app.get(DataSource);
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  const queueJobs = async (organizationId: string) =>
    db.query<Array<{ state: string; count: string }>>(
      `SELECT state, count(*) AS count FROM pgboss.job WHERE group_id = $1 GROUP BY state ORDER BY state`,
      [organizationId],
    );

  it(`deletes each job as its execution ends: after ${EXECUTIONS} executions the queue holds none of them`, async () => {
    const agentId = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: 'n * 2' } });
    const executions = t.app.get(ExecutionsService);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENT }, async () => {
        while (next < EXECUTIONS) {
          const n = next++;
          await t.run(() =>
            executions.execute(org.id, { agentId, input: { n }, waitSeconds: 0, triggeredBy: { type: 'user', id: org.member.id } }),
          );
        }
      }),
    );
    let seen: unknown[] = [];
    const counts = async () =>
      (seen = (
        await db.query<Array<{ status: string; count: string }>>(
          `SELECT status, count(*) AS count FROM agent_executions WHERE organization_id = $1 GROUP BY status ORDER BY status`,
          [org.id],
        )
      ).map((r) => [r.status, Number(r.count)]));
    await eventually(async () => JSON.stringify(await counts()) === JSON.stringify([['succeeded', EXECUTIONS]]), {
      timeoutMs: 150_000,
      intervalMs: 500,
      message: () => `every execution to succeed (${JSON.stringify(seen)})`,
    });
    // The executions are the record; their jobs are gone (the last few may still be settling).
    await eventually(async () => (await queueJobs(org.id)).length === 0, { timeoutMs: 5000 });
    expect(await queueJobs(org.id)).toEqual([]);
    const [sample] = await db.query<Array<{ output: unknown }>>(
      `SELECT output FROM agent_executions WHERE organization_id = $1 AND input = '{"n": 21}'`,
      [org.id],
    );
    expect(sample.output).toBe(42);
  });

  it('keeps a job that failed for good no longer than FINISHED_JOB_SECONDS, by every queue', async () => {
    const queues = await db.query<Array<{ name: string; deletion: number }>>(
      `SELECT name, deletion_seconds AS deletion FROM pgboss.queue ORDER BY name`,
    );
    expect(queues.length).toBeGreaterThanOrEqual(4);
    expect(queues.filter((q) => q.deletion !== FINISHED_JOB_SECONDS)).toEqual([]);
  });

  it('vacuums a hot table past its dead tuples, and gives the hot tables their autovacuum settings', async () => {
    const maintenance = t.app.get(TableMaintenance);
    // Dead tuples of this test's own: 6,000 copies of one execution's row, written and deleted.
    // With random ids, as before partitioning, they go to the default partition: the pass vacuums
    // a partitioned table's partitions one by one.
    const table = 'agent_executions_default';
    const counters = async () => {
      const [row] = await db.query<Array<{ deleted: string; vacuums: string }>>(
        `SELECT n_tup_del AS deleted, vacuum_count AS vacuums FROM pg_stat_user_tables WHERE relid = $1::regclass`,
        [table],
      );
      return { deleted: Number(row.deleted), vacuums: Number(row.vacuums) };
    };
    const before = await counters();
    const [{ id }] = await db.query<Array<{ id: string }>>(`SELECT id FROM agent_executions WHERE organization_id = $1 LIMIT 1`, [org.id]);
    const columns = `organization_id, agent_id, status, input, output, attempts, triggered_by, created_at`;
    // On one connection, which then flushes its counts at once (a backend may otherwise hold them
    // for seconds, up to a minute while the statistics are busy).
    const runner = db.createQueryRunner();
    try {
      await runner.query(
        `INSERT INTO agent_executions (id, ${columns}) SELECT gen_random_uuid(), ${columns} FROM agent_executions, generate_series(1, 6000) WHERE id = $1`,
        [id],
      );
      await runner.query(
        `DELETE FROM agent_executions WHERE organization_id = $1 AND id <> $2 AND input = (SELECT input FROM agent_executions WHERE id = $2)`,
        [org.id, id],
      );
      await runner.query('SELECT pg_stat_force_next_flush()');
    } finally {
      await runner.release();
    }
    // The statistics have the delete (a backend reports its counts up to seconds later): its dead
    // tuples are counted, not only those the executions above left.
    await eventually(async () => (await counters()).deleted >= before.deleted + 6000, {
      timeoutMs: 15_000,
      intervalMs: 250,
      message: 'the delete to be counted',
    });
    const dead = async () => (await maintenance.stats()).find((s) => s.table === table)!.dead;
    const deadBefore = await dead();
    expect(deadBefore).toBeGreaterThanOrEqual(6000);

    const pass = await maintenance.pass();
    expect(pass?.vacuumed).toContain(table);
    expect((await counters()).vacuums).toBe(before.vacuums + 1);
    // What it removed: most of them (counts from the executions above may still arrive meanwhile).
    expect(await dead()).toBeLessThan(deadBefore - 3000);

    // Every partition of a partitioned one (this week's included), and the others.
    const thisWeek = partitionName('workflow_runs', periodStart(Date.now()));
    const names = ['agent_executions_default', 'workflow_runs_default', thisWeek, 'pgboss.job_common'];
    const tuned = await db.query<Array<{ name: string; options: string[] | null }>>(
      `SELECT t.name, c.reloptions AS options FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) JOIN pg_class c ON c.oid = to_regclass(t.name) ORDER BY t.n`,
      [names],
    );
    expect(tuned.map((r) => r.name)).toEqual(names);
    for (const row of tuned)
      expect({ table: row.name, options: row.options }).toEqual({ table: row.name, options: expect.arrayContaining(HOT_TABLE_AUTOVACUUM) });
  });
});
