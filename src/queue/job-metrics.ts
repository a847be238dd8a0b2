import { Counter, Histogram } from 'prom-client';
import { Metrics } from '../shared/metrics/metrics';

export interface JobMetricNames {
  /** Counter of records reaching each status: queued, running (per attempt), then the final one. */
  total: string;
  /** Histogram of the time from queued to the final status. */
  duration: string;
  /** What a record is, for the help texts ("agent executions"). */
  noun: string;
  /** Labels besides `status` (e.g. `kind`). */
  labelNames: string[];
}

type Labels = Record<string, string>;

/** The two metrics every durable-job kind has, named per kind. */
export class JobMetrics {
  private readonly transitions: Counter;
  private readonly latency: Histogram;

  constructor(metrics: Metrics, names: JobMetricNames) {
    const labelNames = [...names.labelNames, 'status'];
    this.transitions = new Counter({
      name: names.total,
      help: `${names.noun} reaching each status (queued when created, running per attempt, then the final one)`,
      labelNames,
      registers: [metrics.registry],
    });
    this.latency = new Histogram({
      name: names.duration,
      help: `Time from one of the ${names.noun} being queued to its final status`,
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
      registers: [metrics.registry],
    });
  }

  reached(labels: Labels, status: string): void {
    this.transitions.inc({ ...labels, status });
  }

  finished(labels: Labels, record: { status: string; createdAt: Date; finishedAt: Date | null }): void {
    this.reached(labels, record.status);
    if (record.finishedAt) {
      this.latency.observe({ ...labels, status: record.status }, (record.finishedAt.getTime() - record.createdAt.getTime()) / 1000);
    }
  }
}
