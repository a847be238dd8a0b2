import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Job, JobResult } from 'pg-boss';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { PluginRegistry } from '../../plugins/application/plugin-registry';
import { PluginsService } from '../../plugins/application/plugins.service';
import { ExecutionError, PluginLogger } from '../../plugins/domain/plugin';
import { Coalescer } from '../../../shared/batching/coalescer';
import { AttemptOutcome, Execution, ExecutionFailure } from '../domain/execution';
import { ExecutionRepository, StartedAttempt } from '../domain/execution.repository';
import { AgentMetrics } from './agent-metrics';
import { AGENT_QUEUE, EXECUTION_CANCELED, EXECUTION_FINISHED, ExecutionJob } from './execution-job';

/** Failures worth another attempt: the remote side may answer next time. */
const RETRYABLE = new Set(['UPSTREAM_ERROR', 'AGENT_TIMEOUT', 'AGENT_CRASHED']);

/** Jobs one worker loop takes at a time. */
const BATCH_SIZE = 16;

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
    private readonly plugins: PluginsService,
    private readonly registry: PluginRegistry,
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
    const pluginConfigs = new Map<string, Promise<Record<string, unknown> | null>>();
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
  private async process(
    attempt: StartedAttempt,
    lease: AbortSignal,
    pluginConfigs: Map<string, Promise<Record<string, unknown> | null>>,
  ): Promise<boolean> {
    this.metrics.reached(attempt.kind, 'running');
    const { organizationId, id } = attempt.execution;
    const slug = attempt.kind.split('.', 1)[0];
    const key = `${organizationId}:${slug}`;
    if (!pluginConfigs.has(key)) pluginConfigs.set(key, this.pluginConfig(organizationId, slug));
    const outcome = await this.attempt(attempt, await pluginConfigs.get(key)!, lease);
    if (outcome.status !== 'succeeded' && RETRYABLE.has(outcome.error.code) && attempt.execution.attempts < attempt.maxAttempts) {
      return !(await this.executions.awaitRetry(id, outcome.error));
    }
    const finished = await this.finishes.add({ id, outcome });
    if (finished) {
      this.metrics.finished(attempt.kind, finished);
      this.signals.publish(EXECUTION_FINISHED, id, finished);
    }
    return true;
  }

  /** The installation's config (secrets decrypted), or null when the plugin is no longer installed. */
  private pluginConfig(organizationId: string, slug: string): Promise<Record<string, unknown> | null> {
    return this.plugins.get(organizationId, slug).then(
      ({ installation }) => installation.config,
      () => null,
    );
  }

  private async attempt(
    attempt: StartedAttempt,
    pluginConfig: Record<string, unknown> | null,
    lease: AbortSignal,
  ): Promise<AttemptOutcome> {
    const { execution, kind, timeoutMs } = attempt;
    const found = this.registry.capability('agentKinds', kind);
    if (!pluginConfig) return failed('PLUGIN_NOT_FOUND', `Plugin '${kind.split('.', 1)[0]}' is not installed`);
    if (!found) return failed('PLUGIN_NOT_FOUND', `Agent kind '${kind}' is not in the catalog`);

    const cancel = new AbortController();
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([cancel.signal, timeout, lease]);
    this.running.set(execution.id, cancel);
    try {
      const output = await untilAborted(
        found.capability.execute({
          pluginConfig,
          config: attempt.config,
          input: execution.input,
          signal,
          timeoutMs,
          idempotencyKey: execution.id,
          logger: this.pluginLogger(execution.id, kind),
        }),
        signal,
      );
      return { status: 'succeeded', output: output === undefined ? null : output };
    } catch (error) {
      if (cancel.signal.aborted) return { status: 'canceled', error: { code: 'CANCELED', message: 'The execution was canceled' } };
      if (timeout.aborted) return timedOut(`The agent did not finish within ${timeoutMs} ms`);
      if (lease.aborted) return failed('AGENT_CRASHED', 'The attempt outlived its lease and was abandoned');
      if (error instanceof ExecutionError)
        return error.code === 'AGENT_TIMEOUT' ? timedOut(error.message) : failed(error.code, error.message);
      this.logger.error(`Agent ${kind} failed unexpectedly in execution ${execution.id}: ${(error as Error).stack ?? String(error)}`);
      return failed('AGENT_CRASHED', 'The agent failed unexpectedly');
    } finally {
      this.running.delete(execution.id);
    }
  }

  private pluginLogger(executionId: string, kind: string): PluginLogger {
    return {
      info: (message, fields) => this.logger.log({ msg: message, executionId, kind, ...fields }),
      warn: (message, fields) => this.logger.warn({ msg: message, executionId, kind, ...fields }),
    };
  }
}

function failed(code: string, message: string): { status: 'failed'; error: ExecutionFailure } {
  return { status: 'failed', error: { code, message } };
}

function timedOut(message: string): { status: 'timed_out'; error: ExecutionFailure } {
  return { status: 'timed_out', error: { code: 'AGENT_TIMEOUT', message } };
}

/** Settles with the work, or rejects as soon as the signal aborts (a plugin that ignores it is left behind). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
