import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { JobQueue } from '../../../queue/job-queue';
import { Metrics } from '../../operations/metrics';
import { Execution, ExecutionStatus } from '../domain/execution';
import { AGENT_QUEUE } from './execution-job';

/** Executions by kind and status, their latency, and the queue's depth, on /metrics. */
@Injectable()
export class AgentMetrics {
  private readonly transitions: Counter<'kind' | 'status'>;
  private readonly latency: Histogram<'kind' | 'status'>;

  constructor(metrics: Metrics, queue: JobQueue) {
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
    new Gauge({
      name: 'job_queue_depth',
      help: 'Jobs in the durable queue by state (created = waiting, retry = waiting to retry, active = held by a worker)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const depth = await queue.depth(AGENT_QUEUE).catch(() => ({}) as Record<string, number>);
        for (const state of ['created', 'retry', 'active']) this.set({ queue: AGENT_QUEUE, state }, depth[state] ?? 0);
      },
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
