import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { dataSourceOptions } from './data-source-options';
import { EmbeddedPostgres } from './embedded-postgres';
import { runMigrationsLocked } from './migrator';

const EMBEDDED = Symbol('EmbeddedPostgres');

/** Where the database is, for the parts that open their own connections (the job queue). */
export class DatabaseConnection {
  constructor(
    readonly url: string,
    /** Embedded PGlite: one session for every connection, so no LISTEN/NOTIFY across them. */
    readonly embedded: boolean,
  ) {}
}

/** Closes the pool, then the embedded server if there is one, when the app shuts down. */
@Injectable()
class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(EMBEDDED) private readonly embedded: EmbeddedPostgres | null,
  ) {}

  async onApplicationShutdown(): Promise<void> {
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
      provide: DataSource,
      inject: [AppConfig, EMBEDDED],
      useFactory: async (config: AppConfig, embedded: EmbeddedPostgres | null) => {
        const url = config.database.url ?? embedded!.url;
        const dataSource = new DataSource(dataSourceOptions(url, config.database.poolSize));
        await dataSource.initialize();
        await runMigrationsLocked(dataSource);
        return dataSource;
      },
    },
    {
      provide: DatabaseConnection,
      inject: [AppConfig, EMBEDDED],
      useFactory: (config: AppConfig, embedded: EmbeddedPostgres | null) =>
        new DatabaseConnection(config.database.url ?? embedded!.url, !config.database.url),
    },
    DatabaseLifecycle,
  ],
  exports: [DataSource, DatabaseConnection],
})
export class DatabaseModule {}
