import type { FetchOptions, Job, PgBoss } from 'pg-boss';

/** A claim whose COMMIT went unanswered: its transaction, and the jobs it holds if it committed. */
interface UnsettledClaim<T> {
  xid: string;
  jobs: Array<Job<T>>;
  /** When the claim was made (the jobs' leases started then). */
  at: number;
}

/**
 * Claims a queue's jobs so that none is stranded when the connection drops under the claim.
 *
 * pg-boss claims with one statement; when the connection dies after PostgreSQL committed it but
 * before the answer came back, the worker never learns which jobs it holds, and they sit
 * `active` until their lease runs out (for an agent, its timeout and more). Here the claim runs
 * in a transaction whose id is read first; when its COMMIT goes unanswered, the worker asks the
 * database once it answers again (`txid_status`) whether that transaction committed, and if it
 * did, works the jobs it claimed, with what is left of their leases. A claim that did not
 * commit left the jobs in the queue, for whoever fetches next.
 *
 * A database adapter without transactions (the embedded PGlite's single session, which has no
 * connection to lose) claims with pg-boss's single statement.
 */
export class ClaimingFetch<T extends object> {
  private unsettled: Array<UnsettledClaim<T>> = [];

  constructor(
    private readonly boss: PgBoss,
    private readonly name: string,
  ) {}

  /** Claims up to `options.batchSize` jobs; throws when the database did not answer (see `recovered`). */
  async fetch(options: FetchOptions): Promise<Array<Job<T>>> {
    const db = this.boss.getDb();
    if (!db.beginTransaction) return this.boss.fetch<T>(this.name, options);
    const tx = await db.beginTransaction();
    let xid: string;
    let jobs: Array<Job<T>>;
    try {
      [{ xid }] = (await tx.db.executeSql('SELECT txid_current()::text AS xid')).rows as Array<{ xid: string }>;
      jobs = await this.boss.fetch<T>(this.name, { ...options, db: tx.db });
    } catch (error) {
      await tx.rollback();
      throw error;
    }
    const at = Date.now();
    try {
      await tx.commit();
    } catch (error) {
      if (jobs.length) this.unsettled.push({ xid, jobs, at });
      throw error;
    }
    return jobs;
  }

  /**
   * The jobs of unanswered claims that committed (this worker holds them), each with the lease it
   * has left; claims that did not commit are forgotten. Throws while the database does not answer.
   */
  async recovered(): Promise<Array<Job<T>>> {
    if (!this.unsettled.length) return [];
    const claims = this.unsettled;
    const { rows } = (await this.boss
      .getDb()
      .executeSql('SELECT xid, txid_status(xid::bigint) AS status FROM unnest($1::text[]) AS xid', [claims.map((c) => c.xid)])) as {
      rows: Array<{ xid: string; status: 'committed' | 'aborted' | 'in progress' | null }>;
    };
    const status = new Map(rows.map((row) => [row.xid, row.status]));
    const now = Date.now();
    // A transaction still in progress is one whose backend has not yet seen its connection close.
    this.unsettled = claims.filter((claim) => status.get(claim.xid) === 'in progress' && now - claim.at < leaseMs(claim.jobs));
    return claims
      .filter((claim) => status.get(claim.xid) === 'committed')
      .flatMap((claim) => claim.jobs.map((job) => ({ ...job, expireInSeconds: job.expireInSeconds - (now - claim.at) / 1000 })))
      .filter((job) => job.expireInSeconds > 0);
  }
}

/** The shortest lease of the jobs. */
function leaseMs(jobs: Array<Job<unknown>>): number {
  return Math.min(...jobs.map((job) => job.expireInSeconds)) * 1000;
}
