import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

/**
 * Where the reads that may lag go: the pages of the history lists (executions, runs, trigger
 * events, webhook deliveries). With DATABASE_READ_URL set they read from that replica, through a
 * small pool of its own whose sessions are read-only; unset, from the primary like everything
 * else. A read inside a transaction stays on the transaction's connection, whatever is set: it
 * must see what the transaction wrote. Everything else (a record by id, what the engine reads,
 * every write) goes through the TransactionHost to the primary, never through this.
 */
export class ReadDatabase {
  private static readonly logger = new Logger('Database');

  private constructor(private readonly replica: DataSource | null) {}

  /** The primary only: no replica is set, or this process serves no history list (a worker). */
  static primary(): ReadDatabase {
    return new ReadDatabase(null);
  }

  /** Opens the replica's pool of `poolSize` connections; `primary` is asked which migrations the replica should have. */
  static async replica(url: string, poolSize: number, statementCache: number, primary: DataSource): Promise<ReadDatabase> {
    const options = dataSourceOptions(url, poolSize, statementCache);
    const replica = new DataSource({
      ...options,
      // The service never migrates the replica: it has the primary's schema by replication.
      migrations: [],
      extra: { ...options.extra, application_name: 'platform-read', options: '-c default_transaction_read_only=on' },
    });
    await replica.initialize();
    await ReadDatabase.compareSchemas(primary, replica);
    return new ReadDatabase(replica);
  }

  /** The manager of a read that tolerates the replica's lag. */
  get manager(): EntityManager {
    const host = TransactionHost.getInstance<TransactionalAdapterTypeOrm>();
    return this.replica && !host.isTransactionActive() ? this.replica.manager : host.tx;
  }

  async close(): Promise<void> {
    if (this.replica?.isInitialized) await this.replica.destroy();
  }

  /** A replica behind the primary's last migration (or of another database) answers the lists with errors: said at boot. */
  private static async compareSchemas(primary: DataSource, replica: DataSource): Promise<void> {
    const last = async (ds: DataSource) =>
      ((await ds.query(`SELECT max(timestamp)::text AS last FROM migrations`)) as Array<{ last: string | null }>)[0].last;
    const [expected, found] = await Promise.all([last(primary), last(replica).catch(() => null)]);
    if (expected !== found) {
      ReadDatabase.logger.warn(
        `DATABASE_READ_URL: the replica's last migration is ${found ?? 'none'}, the primary's ${expected ?? 'none'}: ` +
          'is it a streaming replica of DATABASE_URL? The history lists read from it',
      );
    }
  }
}
