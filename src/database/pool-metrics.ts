import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { Gauge } from 'prom-client';
import { DataSource } from 'typeorm';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { Metrics } from '../shared/metrics/metrics';

/**
 * The service's connection pool (the job queue keeps a small one of its own), read at scrape
 * time: `db_pool_connections{state}` (in_use, idle), `db_pool_max_connections` and
 * `db_pool_waiting_requests` (queries waiting for a connection: the pool is too small).
 */
@Injectable()
export class PoolMetrics {
  constructor(dataSource: DataSource, metrics: Metrics) {
    const pool = () => (dataSource.driver as PostgresDriver).master as Pool | undefined;
    new Gauge({
      name: 'db_pool_connections',
      help: "Connections of the service's database pool by state (in_use: lent to a query or transaction; idle)",
      labelNames: ['state'],
      registers: [metrics.registry],
      collect() {
        const p = pool();
        this.set({ state: 'in_use' }, p ? p.totalCount - p.idleCount : 0);
        this.set({ state: 'idle' }, p ? p.idleCount : 0);
      },
    });
    new Gauge({
      name: 'db_pool_max_connections',
      help: "The most connections the service's database pool opens (DB_POOL_SIZE; 1 on PGlite)",
      registers: [metrics.registry],
      collect() {
        this.set(pool()?.options.max ?? 0);
      },
    });
    new Gauge({
      name: 'db_pool_waiting_requests',
      help: "Queries waiting for a connection of the service's database pool",
      registers: [metrics.registry],
      collect() {
        this.set(pool()?.waitingCount ?? 0);
      },
    });
  }
}
