import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Gauge, Histogram } from 'prom-client';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../shared/metrics/metrics';
import { DatabaseConnection } from './database-connection';

/**
 * The tables whose rows churn: each is updated or deleted soon after it is written (records
 * started and finished, jobs fetched and deleted, the queue's counters). Their dead tuples are
 * what slows the statements that find live rows by index when nothing vacuums them.
 */
export const HOT_TABLES = [
  'agent_executions',
  'agent_execution_steps',
  'workflow_runs',
  'workflow_run_steps',
  'workflow_run_items',
  'workflow_run_waits',
  'webhook_messages',
  'webhook_attempts',
  'workflow_trigger_events',
  'idempotency_keys',
  'pgboss.job_common',
  'pgboss.queue',
] as const;

/**
 * Autovacuum settings of the hot tables, where autovacuum runs: a vacuum after 2 % of a
 * table's rows died (the default waits for 20 %, which on a queue of millions of rows is hours
 * of dead index entries walked by every claim), an analyze after 2 % changed, and no cost delay.
 */
export const HOT_TABLE_AUTOVACUUM = [
  'autovacuum_vacuum_scale_factor=0.02',
  'autovacuum_vacuum_threshold=1000',
  'autovacuum_analyze_scale_factor=0.02',
  'autovacuum_vacuum_cost_delay=0',
];

/** A table is vacuumed by the chore once it holds this many dead tuples, and this share of its live ones. */
const MIN_DEAD_TUPLES = 1000;
const DEAD_SHARE = 0.05;
/** The advisory lock that lets one worker process at a time run the chore. */
const LOCK_KEY = 0x7461626c; // "tabl"

export interface TableStats {
  /** The table that holds rows: a hot table, or one of its partitions (HistoryPartitions). */
  table: string;
  /** The hot table it is, or is a partition of. */
  hotTable: string;
  live: number;
  dead: number;
  /** Whether the table has a vacuum scale factor of its own (HOT_TABLE_AUTOVACUUM, or a DBA's, which is kept). */
  tuned: boolean;
}

/** What a pass did: the tables it vacuumed and those it gave the autovacuum settings. */
export interface MaintenancePass {
  vacuumed: string[];
  tuned: string[];
}

/**
 * Keeps the hot tables' dead tuples bounded without a DBA. Every DB_VACUUM_INTERVAL_SECONDS,
 * on one worker process at a time (an advisory lock), it reads the tables' statistics,
 * gives any table without a vacuum scale factor of its own the autovacuum settings above (tables that exist only once
 * the queue started are tuned at its first pass after), and runs `VACUUM (ANALYZE)` on each
 * table past MIN_DEAD_TUPLES and DEAD_SHARE: where autovacuum is off, or cannot keep up, the
 * service does it. `db_dead_tuples{table}` is read at each scrape, and every vacuum's
 * duration goes to `db_vacuum_duration_seconds{table}`.
 *
 * Not on PGlite: its one session serves every request, and a development database does not
 * live long enough to need it.
 */
@Injectable()
export class TableMaintenance implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('TableMaintenance');
  private readonly duration: Histogram<'table'>;
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly config: AppConfig,
    private readonly connection: DatabaseConnection,
    private readonly dataSource: DataSource,
    metrics: Metrics,
  ) {
    const stats = () => this.stats();
    new Gauge({
      name: 'db_dead_tuples',
      help: "Dead tuples of the service's hot tables (Postgres's estimate): rows updated or deleted that no vacuum has removed yet",
      labelNames: ['table'],
      registers: [metrics.registry],
      async collect() {
        const dead = new Map<string, number>();
        for (const row of await stats().catch(() => [])) dead.set(row.hotTable, (dead.get(row.hotTable) ?? 0) + row.dead);
        for (const [table, count] of dead) this.set({ table }, count);
      },
    });
    this.duration = new Histogram({
      name: 'db_vacuum_duration_seconds',
      help: 'Seconds each VACUUM (ANALYZE) of a hot table by the maintenance chore took',
      labelNames: ['table'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    const seconds = this.config.database.vacuumIntervalSeconds;
    if (!this.config.runsWorker || this.connection.singleSession || !seconds) return;
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch((error: unknown) => this.logger.warn(`Table maintenance failed: ${(error as Error).message}`))
        .finally(() => (this.running = undefined));
    }, seconds * 1000);
    this.timer.unref();
  }

  /** Before the pool closes: a vacuum under way ends first. */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * The tables of the hot tables that exist, with their live and dead tuples and whether they
   * are tuned: a partitioned table's partitions one by one (they hold the rows, the statistics
   * and the settings), so a pass vacuums this week's partition, not every week's.
   */
  async stats(): Promise<TableStats[]> {
    const rows = await this.dataSource.query<Array<{ name: string; hot: string; live: string; dead: string; tuned: boolean }>>(
      `SELECT p.relid::regclass::text AS name, t.name AS hot, coalesce(s.n_live_tup, 0) AS live, coalesce(s.n_dead_tup, 0) AS dead,
              EXISTS (SELECT 1 FROM unnest(c.reloptions) AS o WHERE o LIKE 'autovacuum_vacuum_scale_factor=%') AS tuned
         FROM unnest($1::text[]) AS t(name)
         CROSS JOIN LATERAL pg_partition_tree(to_regclass(t.name)) AS p
         JOIN pg_class c ON c.oid = p.relid
         LEFT JOIN pg_stat_user_tables s ON s.relid = p.relid
        WHERE p.isleaf
        ORDER BY 2, 1`,
      [HOT_TABLES],
    );
    return rows.map((r) => ({ table: r.name, hotTable: r.hot, live: Number(r.live), dead: Number(r.dead), tuned: r.tuned }));
  }

  /**
   * One pass (see the class): answers what it did, or null when another process holds the
   * chore's lock. Vacuums run one at a time on a connection of their own, outside any transaction.
   */
  async pass(): Promise<MaintenancePass | null> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [LOCK_KEY])) as Array<{ locked: boolean }>;
      if (!locked) return null;
      try {
        const done: MaintenancePass = { vacuumed: [], tuned: [] };
        for (const table of await this.stats()) {
          // As the catalog spells it (regclass: qualified and quoted where needed), never input.
          const name = table.table;
          if (!table.tuned) {
            await runner.query(`ALTER TABLE ${name} SET (${HOT_TABLE_AUTOVACUUM.join(', ')})`);
            done.tuned.push(table.table);
          }
          if (table.dead < MIN_DEAD_TUPLES || table.dead < table.live * DEAD_SHARE) continue;
          const end = this.duration.startTimer({ table: table.hotTable });
          await runner.query(`VACUUM (ANALYZE) ${name}`);
          end();
          done.vacuumed.push(table.table);
        }
        return done;
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]);
      }
    } finally {
      await runner.release();
    }
  }
}
