import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';
import { preparingClient } from './preparing-client';

/**
 * Every module keeps its ORM entities in `infrastructure/*.orm-entity.ts` (or `.orm-entities.ts`
 * for several); the data source finds them by name, so the database layer imports no module.
 */
const ENTITY_FILES = [
  join(__dirname, '..', 'modules', '*', 'infrastructure', '*.orm-entit{y,ies}.{ts,js}'),
  join(__dirname, '..', 'shared', '*', '*.orm-entity.{ts,js}'),
];

/**
 * The one description of the schema, shared by the service and the TypeORM CLI. With a
 * `statementCache`, each connection keeps that many statements prepared (`preparingClient`).
 */
export function dataSourceOptions(url: string, poolSize = 10, statementCache = 0): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITY_FILES,
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    extra: {
      max: poolSize,
      connectionTimeoutMillis: 5000,
      ...(statementCache > 0 ? { Client: preparingClient(statementCache) } : {}),
    },
  };
}
