import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { Metrics } from '../../../shared/metrics/metrics';
import { Execution, ExecutionStatus } from '../domain/execution';

/** Executions by kind and status, and their latency, on /metrics (the queue's depth is the queue's). */
@Injectable()
export class AgentMetrics {
  private readonly transitions: Counter<'kind' | 'status'>;
  private readonly latency: Histogram<'kind' | 'status'>;

  constructor(metrics: Metrics) {
    const registers = [metrics.registry];
    this.transitions = new Counter({
      name: 'agent_executions_total',
      help: 'Agent executions reaching each status (queued when created, running per attempt, then the final one), by agent kind',
      labelNames: ['kind', 'status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'agent_execution_duration_seconds',
      help: 'Time from an execution being queued to its final status, by agent kind and final status',
      labelNames: ['kind', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
  }

  reached(kind: string, status: ExecutionStatus): void {
    this.transitions.inc({ kind, status });
  }

  finished(kind: string, execution: Execution): void {
    this.reached(kind, execution.status);
    if (execution.finishedAt) {
      this.latency.observe({ kind, status: execution.status }, (execution.finishedAt.getTime() - execution.createdAt.getTime()) / 1000);
    }
  }
}
