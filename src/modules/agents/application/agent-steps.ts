import { Injectable } from '@nestjs/common';
import { personBehind, withPerson } from '../../../shared/auth/principal';
import { CANCELED, Outcome } from '../../../shared/jobs/outcome';
import { Agent } from '../domain/agent';
import { AgentRepository } from '../domain/agent.repository';
import { isFinished, Trigger } from '../domain/execution';
import { ExecutionRepository } from '../domain/execution.repository';
import { AgentAttempt, AgentRunner } from './agent-runner';
import { ExecutionJobs } from './execution-jobs';

/** An attempt of an execution carried by something else, which records its outcome. */
export interface OwnedAttempt extends Omit<AgentAttempt, 'agent' | 'first'> {
  agent: Agent;
  triggeredBy: Trigger;
}

export interface AgentStepAttempt {
  agent: Agent;
  /** The step's execution, the same for every attempt of the step. */
  executionId: string;
  runId: string;
  /** The run's depth: the execution is at the same depth. */
  depth: number;
  /** The person behind the run, behind its step's execution too. */
  person?: string;
  stepId: string;
  input: unknown;
  timeoutMs: number;
  /** The installation's config of the agent's plugin (the run looks it up once). */
  pluginConfig: Record<string, unknown> | null;
  cancel: AbortSignal;
  lease?: AbortSignal;
}

/**
 * Agents as workflow steps. Each step is one execution of the agent, triggered by the run
 * (it shows in the agent's history), carried by the run's job rather than a job of its own;
 * every attempt reuses it, and the remote agent gets the key `<runId>:<stepId>`.
 */
@Injectable()
export class AgentSteps {
  constructor(
    private readonly agents: AgentRepository,
    private readonly executions: ExecutionRepository,
    private readonly runner: AgentRunner,
    private readonly jobs: ExecutionJobs,
  ) {}

  /** The agent, for its config and defaults; null once deleted. */
  agent(organizationId: string, id: string): Promise<Agent | null> {
    return this.agents.find(organizationId, id);
  }

  /** One attempt. An execution already final (a worker died after recording it) answers its outcome again. */
  attempt(step: AgentStepAttempt): Promise<Outcome> {
    return this.runOwned({
      agent: step.agent,
      executionId: step.executionId,
      triggeredBy: { type: 'workflow_run', id: step.runId, ...withPerson(step.person) },
      idempotencyKey: `${step.runId}:${step.stepId}`,
      input: step.input,
      timeoutMs: step.timeoutMs,
      pluginConfig: step.pluginConfig,
      cancel: step.cancel,
      lease: step.lease,
      context: { runId: step.runId, stepId: step.stepId, executionId: step.executionId },
      depth: step.depth,
    });
  }

  /**
   * One attempt of an execution that something else carries (a run's step, another agent's
   * tool call): inserted as `running` the first time, its attempts counted after; an execution
   * already final answers its outcome again. Record the outcome with `finish`.
   */
  async runOwned(owned: OwnedAttempt): Promise<Outcome> {
    const { agent, triggeredBy, ...attempt } = owned;
    attempt.person ??= personBehind(triggeredBy);
    const started = await this.executions.startOwned({
      id: owned.executionId,
      organizationId: agent.organizationId,
      agentId: agent.id,
      status: 'running',
      input: owned.input ?? null,
      output: null,
      error: null,
      attempts: 1,
      jobId: null,
      triggeredBy,
      retryOf: null,
      retriedBy: null,
      createdAt: new Date(),
      startedAt: new Date(),
      finishedAt: null,
    });
    if (!started) {
      const recorded = await this.executions.findById(owned.executionId);
      if (recorded && isFinished(recorded)) {
        return recorded.status === 'succeeded'
          ? { status: 'succeeded', output: recorded.output }
          : {
              status: recorded.status as 'failed' | 'timed_out' | 'canceled',
              error: recorded.error ?? CANCELED,
            };
      }
    }
    this.jobs.metrics.reached({ kind: agent.kind }, 'running');
    return this.runner.run({ ...attempt, agent, first: started?.attempts === 1 });
  }

  /**
   * Cancels the executions of steps that a run's end left open (a step waiting for its next
   * attempt holds its execution meanwhile, and no worker is there to end it).
   */
  async cancelOwned(executionIds: string[]): Promise<void> {
    for (const id of executionIds) {
      const execution = await this.executions.findById(id);
      if (!execution || isFinished(execution)) continue;
      const agent = await this.agents.find(execution.organizationId, execution.agentId);
      await this.jobs.cancel(() => this.executions.cancel(execution.organizationId, execution.agentId, id, CANCELED), {
        kind: agent?.kind ?? 'unknown',
      });
    }
  }

  /** Records the step's final outcome on its execution. */
  async finish(agent: Agent, executionId: string, outcome: Outcome): Promise<void> {
    await this.jobs.finishOwned(executionId, outcome, { kind: agent.kind });
  }
}
