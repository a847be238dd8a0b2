import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { Metrics } from '../../../shared/metrics/metrics';
import { Run } from '../domain/run';

/** Finished runs by status, and their latency, on /metrics. */
@Injectable()
export class RunMetrics {
  private readonly runs: Counter<'status'>;
  private readonly latency: Histogram<'status'>;

  constructor(metrics: Metrics) {
    const registers = [metrics.registry];
    this.runs = new Counter({
      name: 'workflow_runs_total',
      help: 'Workflow runs reaching a final status',
      labelNames: ['status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'workflow_run_duration_seconds',
      help: 'Time from a run being queued to its final status, by status',
      labelNames: ['status'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
      registers,
    });
  }

  finished(run: Run): void {
    this.runs.inc({ status: run.status });
    if (run.finishedAt) this.latency.observe({ status: run.status }, (run.finishedAt.getTime() - run.createdAt.getTime()) / 1000);
  }
}
