import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';

/** The one description of the schema, shared by the service and the TypeORM CLI. */
export function dataSourceOptions(url: string, poolSize = 10): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    extra: { max: poolSize, connectionTimeoutMillis: 5000 },
  };
}
