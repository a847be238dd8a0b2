import { Injectable, OnModuleInit } from '@nestjs/common';
import { later, RunResult, RunSignals } from '../../../queue/durable-jobs';
import { personBehind } from '../../../shared/auth/principal';
import { CapabilityRunner, isRetryable, PluginConfigs } from '../../plugins/application/capability-runner';
import { ExecutionRepository, StartedAttempt } from '../domain/execution.repository';
import { AgentRunner } from './agent-runner';
import { ExecutionJobs } from './execution-jobs';

/**
 * The worker side of agent executions: the durable-job core hands it one started attempt at
 * a time; it calls the plugin with a signal that aborts on timeout, cancel or a lost lease.
 * A retryable failure with attempts left answers `later`: the execution is `waiting` for its
 * next attempt (1 s, doubling, at most a minute), holding no worker; a worker killed
 * mid-attempt leaves the job `active` until its lease expires, and
 * then another worker runs it again with the same idempotency key (the execution id).
 */
@Injectable()
export class AgentExecutor implements OnModuleInit {
  /** Installation configs, looked up at most once a second per organization and plugin. */
  private readonly pluginConfigs: PluginConfigs;

  constructor(
    private readonly jobs: ExecutionJobs,
    private readonly executions: ExecutionRepository,
    private readonly agents: AgentRunner,
    runner: CapabilityRunner,
  ) {
    this.pluginConfigs = runner.configs(1000);
  }

  onModuleInit(): void {
    this.jobs.work((attempt, signals) => this.attempt(attempt, signals));
  }

  async attempt(attempt: StartedAttempt, signals: RunSignals): Promise<RunResult> {
    const { execution } = attempt;
    const outcome = await this.agents.run({
      agent: { organizationId: execution.organizationId, kind: attempt.kind, config: attempt.config },
      executionId: execution.id,
      depth: 0,
      person: personBehind(execution.triggeredBy),
      first: execution.attempts === 1,
      pluginConfig: await this.pluginConfigs.get(execution.organizationId, attempt.kind),
      input: execution.input,
      timeoutMs: attempt.timeoutMs,
      idempotencyKey: execution.id,
      cancel: signals.cancel,
      lease: signals.lease,
      context: { executionId: execution.id },
    });
    // Canceled: the API recorded it. Lease lost: the job runs again (another worker, or this one).
    if (outcome.status === 'canceled' || (signals.lease.aborted && outcome.status !== 'succeeded')) return null;
    if (isRetryable(outcome) && execution.attempts < attempt.maxAttempts)
      return later(new Date(Date.now() + retryDelayMs(execution.attempts)), outcome.error);
    return outcome;
  }
}

/** The wait after a failed attempt (the first is attempt 1): 1 s, doubling, at most a minute. */
export function retryDelayMs(attempt: number): number {
  return Math.min(1000 * 2 ** (attempt - 1), 60_000);
}
