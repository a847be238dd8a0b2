import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { idAt } from '../shared/ids/time-ordered-id';

const DAY_MS = 86_400_000;
/**
 * What one partition holds: a week (Monday to Monday, UTC). A statement that cannot be pruned
 * to one partition (a list page of an organization, the reconciler's scan) reads and plans one
 * index per partition: with 90 days kept, weeks make 15 of them where days would make 95 (which
 * measured 5 ms of planning per list page instead of under 1). A record leaves within a week
 * after its retention.
 */
export const PERIOD_MS = 7 * DAY_MS;
/** 1970-01-05, the first Monday of the epoch. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
/** The next week's partitions are made this many days before it begins (and last week's kept for a clock a little slow). */
const DAYS_AHEAD = 3;
/** How often worker processes make partitions ahead and drop expired ones. */
const INTERVAL_MS = 60 * 60_000;
/** Rows of a default partition deleted per statement once past the retention. */
const DEFAULT_BATCH = 5000;
/** DDL that would wait longer than this for a lock gives up until the next pass (it must not queue requests behind it). */
const LOCK_TIMEOUT = '5s';
/** Serializes the passes of every process. */
const LOCK_KEY = 0x70617274; // "part"

/**
 * One kind of history record: its table, partitioned by ranges of its time-ordered id, one
 * range a week, and the tables of its parts, partitioned by the parent's id on the same ranges
 * (so a week's records and their parts are dropped together).
 */
export interface HistoryFamily {
  table: string;
  parts: Array<{ table: string; key: string }>;
  /** Unique indexes each partition has of its own (a partitioned table's must hold its key). */
  ownIndexes?: Array<{ suffix: string; definition: string }>;
}

export const HISTORY_FAMILIES: HistoryFamily[] = [
  { table: 'agent_executions', parts: [{ table: 'agent_execution_steps', key: 'execution_id' }] },
  {
    table: 'workflow_runs',
    parts: [
      { table: 'workflow_run_steps', key: 'run_id' },
      { table: 'workflow_run_items', key: 'run_id' },
      { table: 'workflow_run_waits', key: 'run_id' },
    ],
  },
  {
    table: 'workflow_trigger_events',
    parts: [],
    ownIndexes: [{ suffix: 'dedupe_key', definition: '(trigger_id, dedupe_key) WHERE dedupe_key IS NOT NULL' }],
  },
  { table: 'webhook_messages', parts: [{ table: 'webhook_attempts', key: 'message_id' }] },
];

/** How many days of a family's records are kept: the longest any organization keeps. */
export type Retention = () => Promise<number>;

/** What a pass did, by partition name. */
export interface PartitionPass {
  created: string[];
  dropped: string[];
  /** Rows deleted from the default partitions (records written before partitioning). */
  deleted: number;
}

/**
 * Keeps the history tables (HISTORY_FAMILIES) in week partitions: at boot and every hour it
 * makes the partitions of yesterday to DAYS_AHEAD days ahead, and drops those whose week ended
 * more than the family's retention ago, parts first. Nothing is deleted row by row but what the
 * default partitions hold: records written before the tables were partitioned (random ids),
 * and any written while their week had no partition yet, which a new partition takes over.
 *
 * The webhook delivery log and the trigger events keep WEBHOOK_LOG_RETENTION_DAYS and
 * TRIGGER_EVENT_RETENTION_DAYS; executions and runs keep the retention their module gives
 * (`keep`): the longest of any organization's, within HISTORY_RETENTION_DAYS. A family with
 * none given is never dropped.
 */
@Injectable()
export class HistoryPartitions implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('HistoryPartitions');
  private readonly retentions = new Map<string, Retention>();
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
  ) {
    this.retentions.set('webhook_messages', async () => config.webhooks.logRetentionDays);
    this.retentions.set('workflow_trigger_events', async () => config.triggers.eventRetentionDays);
  }

  /** Sets how many days a family's records are kept. */
  keep(table: string, retention: Retention): void {
    this.retentions.set(table, retention);
  }

  async onApplicationBootstrap(): Promise<void> {
    // Every process makes sure this week's partitions exist before it serves (a quick look when they do).
    await this.ensure(new Date());
    if (!this.config.runsWorker) return;
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch((error: unknown) => this.logger.warn(`History partitions: ${(error as Error).message}`))
        .finally(() => (this.running = undefined));
    }, INTERVAL_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Makes the partitions ahead, then drops the expired ones. */
  async pass(now = new Date()): Promise<PartitionPass> {
    const created = await this.ensure(now);
    const { dropped, deleted } = await this.dropExpired(now);
    if (created.length || dropped.length || deleted) {
      this.logger.log(`Partitions made: ${created.length}, dropped: ${dropped.length}; old rows deleted: ${deleted}`);
    }
    return { created, dropped, deleted };
  }

  /** Makes the missing partitions of the weeks from a day before `from` to DAYS_AHEAD days after `to`. */
  async ensure(from: Date, to: Date = from): Promise<string[]> {
    const created: string[] = [];
    const last = periodStart(to.getTime() + DAYS_AHEAD * DAY_MS);
    for (const family of HISTORY_FAMILIES) {
      const existing = new Set((await this.partitions(family.table)).map((p) => p.name));
      for (let start = periodStart(from.getTime() - DAY_MS); start <= last; start += PERIOD_MS) {
        if (existing.has(partitionName(family.table, start))) continue;
        if (await this.create(family, start)) created.push(partitionName(family.table, start));
      }
    }
    return created;
  }

  /** Drops the partitions of weeks that ended more than their family's retention ago. */
  async dropExpired(now = new Date()): Promise<{ dropped: string[]; deleted: number }> {
    const dropped: string[] = [];
    let deleted = 0;
    for (const family of HISTORY_FAMILIES) {
      const retention = this.retentions.get(family.table);
      if (!retention) continue;
      const cutoff = now.getTime() - (await retention()) * DAY_MS;
      for (const partition of await this.partitions(family.table)) {
        if (partition.start + PERIOD_MS > cutoff) continue;
        await this.drop(family, partition.start);
        dropped.push(partition.name);
      }
      deleted += await this.deleteFromDefault(family, new Date(cutoff));
    }
    return { dropped, deleted };
  }

  /** The week partitions of a table, oldest first. */
  async partitions(table: string): Promise<Array<{ name: string; start: number }>> {
    const rows: Array<{ name: string }> = await this.dataSource.query(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = $1::regclass AND c.relname LIKE $2 ORDER BY c.relname`,
      [table, `${table}_p%`],
    );
    return rows.map(({ name }) => ({ name, start: startOf(name) })).filter((p) => !Number.isNaN(p.start));
  }

  /**
   * One week's partitions of a family, in one transaction: each made apart (by LIKE), given the
   * rows of its range the default partition holds (parts first, so that moving a record
   * cascades to none), then attached (which locks the parent only against other DDL).
   */
  private create(family: HistoryFamily, start: number): Promise<boolean> {
    return this.locked(async (manager) => {
      const parent = partitionName(family.table, start);
      const exists: unknown[] = await manager.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [parent]);
      if (exists.length) return false;
      const range = [idAt(start), idAt(start + PERIOD_MS)];
      const bounds = `FOR VALUES FROM ('${range[0]}') TO ('${range[1]}')`;
      for (const part of [...family.parts.map((p) => ({ ...p, own: [] })), { table: family.table, key: 'id', own: family.ownIndexes ?? [] }]) {
        const name = partitionName(part.table, start);
        await manager.query(`CREATE TABLE "${name}" (LIKE "${part.table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`);
        await manager.query(
          `WITH moved AS (DELETE FROM "${part.table}_default" WHERE "${part.key}" >= $1 AND "${part.key}" < $2 RETURNING *)
           INSERT INTO "${name}" SELECT * FROM moved`,
          range,
        );
        for (const index of part.own) await manager.query(`CREATE UNIQUE INDEX "${name}_${index.suffix}" ON "${name}" ${index.definition}`);
      }
      await manager.query(`ALTER TABLE "${family.table}" ATTACH PARTITION "${parent}" ${bounds}`);
      for (const part of family.parts) {
        await manager.query(`ALTER TABLE "${part.table}" ATTACH PARTITION "${partitionName(part.table, start)}" ${bounds}`);
      }
      return true;
    });
  }

  /** Drops one week's partitions of a family: its parts', then its own (detached first, being referenced). */
  private drop(family: HistoryFamily, start: number): Promise<void> {
    return this.locked(async (manager) => {
      for (const part of family.parts) await manager.query(`DROP TABLE IF EXISTS "${partitionName(part.table, start)}"`);
      const name = partitionName(family.table, start);
      await manager.query(`ALTER TABLE "${family.table}" DETACH PARTITION "${name}"`);
      await manager.query(`DROP TABLE "${name}"`);
    });
  }

  /** Deletes what the default partition holds from before `cutoff`, a batch at a time (parts go by cascade). */
  private async deleteFromDefault(family: HistoryFamily, cutoff: Date): Promise<number> {
    let deleted = 0;
    for (;;) {
      const [, count] = (await this.dataSource.query(
        `DELETE FROM "${family.table}_default" WHERE id IN (SELECT id FROM "${family.table}_default" WHERE created_at < $1 LIMIT ${DEFAULT_BATCH})`,
        [cutoff],
      )) as [unknown, number];
      deleted += count;
      if (count < DEFAULT_BATCH) return deleted;
    }
  }

  private locked<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await manager.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      return work(manager);
    });
  }
}

/** The Monday (00:00 UTC) that begins the week of `ms`. */
export function periodStart(ms: number): number {
  return Math.floor((ms - FIRST_MONDAY_MS) / PERIOD_MS) * PERIOD_MS + FIRST_MONDAY_MS;
}

/** `<table>_pYYYYMMDD`: the Monday the week begins (UTC). */
export function partitionName(table: string, start: number): string {
  return `${table}_p${new Date(start).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

function startOf(name: string): number {
  const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : NaN;
}
