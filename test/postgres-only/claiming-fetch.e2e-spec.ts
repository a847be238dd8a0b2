import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { Job, PgBoss } from 'pg-boss';
import { QueueWorker } from '../../src/queue/queue-worker';
import { eventually } from '../support/eventually';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';

const QUEUE = 'things';
/** Far longer than the test: a job left to its lease would fail it. */
const LEASE_SECONDS = 120;
/** In pg-boss's claim of jobs, and in no other statement a worker sends. */
const CLAIM = 'SKIP LOCKED';

/**
 * A worker whose connection drops as it claims jobs, against a real server through a TCP proxy:
 * the claim (or its COMMIT) reaches PostgreSQL, and the answer never comes back. No job may be
 * left `active` with no worker until its lease runs out. PGlite has no connection to lose.
 */
describe('claiming jobs across a dropped connection', () => {
  const name = `platform_claims_${randomBytes(4).toString('hex')}`;
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  let proxy: TcpProxy;
  let boss: PgBoss;
  let worker: QueueWorker<{ n: number }> | undefined;

  const queued = async (ids: string[]): Promise<number> => {
    const { rows } = (await boss.getDb().executeSql('SELECT count(*)::int AS n FROM claims.job WHERE id = ANY($1::uuid[])', [ids])) as {
      rows: Array<{ n: number }>;
    };
    return rows[0].n;
  };

  beforeAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    proxy = await startTcpProxy(url);
    boss = new PgBoss({ connectionString: proxy.url, schema: 'claims', supervise: false, schedule: false, useListenNotify: false });
    boss.on('error', () => undefined);
    await boss.start();
    await boss.createQueue(QUEUE);
  });

  afterEach(async () => {
    await worker?.stop(2000);
    worker = undefined;
  });

  afterAll(async () => {
    await boss.stop({ graceful: false });
    await proxy.close();
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  /** Sends `count` jobs, arms the drop, and starts a worker: answers the jobs' ids, what ran (in order), and the drop. */
  const claimedWhileDropping = async (count: number, ...texts: string[]) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n++) ids.push((await boss.send(QUEUE, { n }, { expireInSeconds: LEASE_SECONDS, retryLimit: 0 }))!);
    const dropped = proxy.dropAfter(...texts);
    const ran: string[] = [];
    worker = new QueueWorker(boss, {
      schema: 'claims',
      name: QUEUE,
      capacity: 8,
      batchSize: 8,
      handler: (jobs: Array<Job<{ n: number }>>) =>
        jobs.map(async (job) => {
          ran.push(job.id);
          return { id: job.id, status: 'completed' as const };
        }),
    });
    worker.start();
    return { ids, ran, dropped };
  };

  /** Every job ran once, and was completed (deleted from the queue), within seconds, not at its lease. */
  const everyJobRanOnce = async (ids: string[], ran: string[]) => {
    await eventually(() => ran.length >= ids.length, { timeoutMs: 5000, message: () => `${ids.length} jobs to run (${ran.length} ran)` });
    expect([...ran].sort()).toEqual([...ids].sort());
    await eventually(async () => (await queued(ids)) === 0, { timeoutMs: 5000, message: 'the completed jobs to leave the queue' });
  };

  it('works the jobs of a claim whose COMMIT went through unanswered, at once and once each', async () => {
    const { ids, ran, dropped } = await claimedWhileDropping(3, CLAIM, 'COMMIT');
    await dropped;
    await everyJobRanOnce(ids, ran);
  });

  it('runs the jobs of a claim that dropped before it committed, once each, at the next claim', async () => {
    const { ids, ran, dropped } = await claimedWhileDropping(3, CLAIM);
    await dropped;
    await everyJobRanOnce(ids, ran);
  });

  it('claims as before on a connection that stays', async () => {
    const ids: string[] = [];
    const { ran } = await claimedWhileDropping(0, 'a statement no one sends');
    for (let n = 0; n < 5; n++) ids.push((await boss.send(QUEUE, { n }, { expireInSeconds: LEASE_SECONDS }))!);
    worker!.wake();
    await everyJobRanOnce(ids, ran);
  });
});
