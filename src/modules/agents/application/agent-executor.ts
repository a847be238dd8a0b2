import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Job, JobResult } from 'pg-boss';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { Coalescer } from '../../../shared/batching/coalescer';
import { CapabilityRunner, isRetryable } from '../../plugins/application/capability-runner';
import { AttemptOutcome, Execution } from '../domain/execution';
import { ExecutionRepository, StartedAttempt } from '../domain/execution.repository';
import { AgentMetrics } from './agent-metrics';
import { AGENT_QUEUE, EXECUTION_CANCELED, EXECUTION_FINISHED, ExecutionJob } from './execution-job';

/** Jobs one worker loop takes at a time. */
const BATCH_SIZE = 16;

type PluginConfigs = Map<string, Promise<Record<string, unknown> | null>>;

/**
 * The worker side of agent executions. Each job names an execution; an attempt moves it to
 * `running` (a guarded UPDATE, so a canceled or finished one is left alone), calls the
 * plugin with a signal that aborts on timeout, cancel or a lost lease, and records the
 * outcome with another guarded UPDATE. A retryable failure goes back to `queued` and its job
 * is failed so the queue retries it with backoff; a worker killed mid-attempt leaves the job
 * `active` until its lease expires, and then another worker runs it again with the same
 * idempotency key (the execution id).
 */
@Injectable()
export class AgentExecutor implements OnModuleInit {
  private readonly logger = new Logger('AgentExecutor');
  private readonly running = new Map<string, AbortController>();
  /** Outcomes finished in the same turn are written in one statement. */
  private readonly finishes = new Coalescer<{ id: string; outcome: AttemptOutcome }, Execution | null>((outcomes) =>
    this.executions.finish(outcomes),
  );

  constructor(
    private readonly queue: JobQueue,
    private readonly signals: Signals,
    private readonly executions: ExecutionRepository,
    private readonly runner: CapabilityRunner,
    private readonly metrics: AgentMetrics,
  ) {}

  onModuleInit(): void {
    this.queue.register<ExecutionJob>({ name: AGENT_QUEUE, batchSize: BATCH_SIZE, handler: (jobs) => this.handle(jobs) });
    this.signals.on(EXECUTION_CANCELED, (id) => this.running.get(id)?.abort());
  }

  /**
   * One batch: the executions are moved to `running` in one statement, run concurrently, and
   * their outcomes written together as they come in. A job whose attempt could not be
   * recorded (the database went away) is failed, so the queue runs it again.
   */
  async handle(jobs: Array<Job<ExecutionJob>>): Promise<JobResult[]> {
    let started: StartedAttempt[];
    try {
      started = await this.executions.start(jobs.map((job) => job.data.executionId));
    } catch (error) {
      this.logger.warn(`Executions not started: ${(error as Error).message}`);
      return jobs.map((job) => ({ id: job.id, status: 'failed', output: { message: (error as Error).message } }));
    }
    const byExecution = new Map(started.map((a) => [a.execution.id, a]));
    const pluginConfigs: PluginConfigs = new Map();
    return Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        const attempt = byExecution.get(job.data.executionId);
        // Canceled, already finished, or its agent deleted: nothing to run.
        if (!attempt) return { id: job.id, status: 'completed' };
        try {
          return { id: job.id, status: (await this.process(attempt, job.signal, pluginConfigs)) ? 'completed' : 'failed' };
        } catch (error) {
          this.logger.warn(`Execution ${attempt.execution.id} not recorded: ${(error as Error).message}`);
          return { id: job.id, status: 'failed', output: { message: (error as Error).message } };
        }
      }),
    );
  }

  /** Runs one attempt and records it; answers false when the job should be retried. */
  private async process(attempt: StartedAttempt, lease: AbortSignal, pluginConfigs: PluginConfigs): Promise<boolean> {
    const { organizationId, id } = attempt.execution;
    this.metrics.reached(attempt.kind, 'running');
    const outcome = await this.run(attempt, await this.pluginConfig(organizationId, attempt.kind, pluginConfigs), lease);
    if (isRetryable(outcome) && attempt.execution.attempts < attempt.maxAttempts && 'error' in outcome) {
      return !(await this.executions.awaitRetry(id, outcome.error));
    }
    const finished = await this.finishes.add({ id, outcome });
    if (finished) {
      this.metrics.finished(attempt.kind, finished);
      this.signals.publish(EXECUTION_FINISHED, id, finished);
    }
    return true;
  }

  private async run(attempt: StartedAttempt, pluginConfig: Record<string, unknown> | null, lease: AbortSignal): Promise<AttemptOutcome> {
    const { execution } = attempt;
    const cancel = new AbortController();
    this.running.set(execution.id, cancel);
    try {
      const outcome = await this.runner.run({
        kind: 'agentKinds',
        qualified: attempt.kind,
        pluginConfig,
        config: attempt.config,
        input: execution.input,
        timeoutMs: attempt.timeoutMs,
        idempotencyKey: execution.id,
        cancel: cancel.signal,
        lease,
        context: { executionId: execution.id },
      });
      return outcome.status === 'canceled' ? { ...outcome, error: { code: 'CANCELED', message: 'The execution was canceled' } } : outcome;
    } finally {
      this.running.delete(execution.id);
    }
  }

  /** One lookup per plugin installation and batch. */
  private pluginConfig(organizationId: string, kind: string, cache: PluginConfigs): Promise<Record<string, unknown> | null> {
    const slug = kind.split('.', 1)[0];
    const key = `${organizationId}:${slug}`;
    if (!cache.has(key)) cache.set(key, this.runner.pluginConfig(organizationId, slug));
    return cache.get(key)!;
  }
}
