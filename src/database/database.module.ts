import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { AppliedMigrations } from './applied-migrations';
import { DatabaseConnection } from './database-connection';
import { dataSourceOptions } from './data-source-options';
import { EmbeddedPostgres } from './embedded-postgres';
import { HistoryPartitions } from './history-partitions';
import { runMigrationsLocked } from './migrator';
import { PoolMetrics } from './pool-metrics';
import { ReadDatabase } from './read-database';
import { migrateAsOwner, warnWhenServiceOwnsAuditLog } from './service-role';
import { TableMaintenance } from './table-maintenance';

const EMBEDDED = Symbol('EmbeddedPostgres');
/** The primary's DataSource, migrated, and the migrations this boot ran. */
const MIGRATED = Symbol('MigratedDataSource');

async function servesPglite(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const [{ version }] = (await client.query<{ version: string }>('SELECT version()')).rows;
    return version.includes('PGlite');
  } finally {
    await client.end();
  }
}

/** Closes the pools (the replica's, then the primary's), then the embedded server if there is one, when the app shuts down. */
@Injectable()
class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(
    private readonly dataSource: DataSource,
    private readonly reads: ReadDatabase,
    @Inject(EMBEDDED) private readonly embedded: EmbeddedPostgres | null,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.reads.close();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    await this.embedded?.stop();
  }
}

@Global()
@Module({
  providers: [
    {
      provide: EMBEDDED,
      inject: [AppConfig],
      useFactory: async (config: AppConfig) => {
        if (config.database.url) return null;
        const embedded = await EmbeddedPostgres.start(config.database.dataDir, config.database.poolSize + 10);
        new Logger('Database').log(`No DATABASE_URL: embedded PGlite with data in ${config.database.dataDir}`);
        return embedded;
      },
    },
    {
      provide: DatabaseConnection,
      inject: [AppConfig, EMBEDDED],
      useFactory: async (config: AppConfig, embedded: EmbeddedPostgres | null) =>
        embedded
          ? new DatabaseConnection(embedded.url, true)
          : new DatabaseConnection(config.database.url!, await servesPglite(config.database.url!)),
    },
    {
      provide: MIGRATED,
      inject: [AppConfig, DatabaseConnection],
      useFactory: async (config: AppConfig, connection: DatabaseConnection) => {
        // PGlite keeps one session for every connection, and its prepared statements past a reconnect.
        const [poolSize, statementCache] = connection.singleSession ? [1, 0] : [config.database.poolSize, config.database.statementCache];
        const dataSource = new DataSource(dataSourceOptions(connection.url, poolSize, statementCache));
        await dataSource.initialize();
        // With DATABASE_MIGRATION_URL the schema's owner migrates, and the service's role gets only its grants.
        const ran =
          config.database.migrationUrl && !connection.singleSession
            ? await migrateAsOwner(config.database.migrationUrl, dataSource)
            : await runMigrationsLocked(dataSource, { lock: !connection.singleSession });
        if (!connection.singleSession) await warnWhenServiceOwnsAuditLog(dataSource);
        return { dataSource, applied: new AppliedMigrations(ran) };
      },
    },
    { provide: DataSource, inject: [MIGRATED], useFactory: (migrated: { dataSource: DataSource }) => migrated.dataSource },
    { provide: AppliedMigrations, inject: [MIGRATED], useFactory: (migrated: { applied: AppliedMigrations }) => migrated.applied },
    {
      // Only processes that serve the API read history lists; a worker opens no replica pool.
      provide: ReadDatabase,
      inject: [AppConfig, DataSource],
      useFactory: (config: AppConfig, primary: DataSource) =>
        config.database.readUrl && config.runsApi
          ? ReadDatabase.replica(config.database.readUrl, Math.ceil(config.database.poolSize / 2), config.database.statementCache, primary)
          : ReadDatabase.primary(),
    },
    DatabaseLifecycle,
    PoolMetrics,
    TableMaintenance,
    HistoryPartitions,
  ],
  exports: [DataSource, DatabaseConnection, HistoryPartitions, ReadDatabase, AppliedMigrations],
})
export class DatabaseModule {}
