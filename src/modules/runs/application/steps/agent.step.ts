import { Injectable } from '@nestjs/common';
import { personBehind } from '../../../../shared/auth/principal';
import { canceled, Outcome } from '../../../../shared/jobs/outcome';
import { AgentSteps } from '../../../agents/application/agent-steps';
import { Agent } from '../../../agents/domain/agent';
import { DefinitionContext, StepDefinition } from '../../../workflows/domain/definition';
import { StepAnswer, StepContext, StepKind } from './step-kind';

/**
 * `{ "agent": "<agent id>" }`: the agent runs the step's input. The step keeps one execution
 * of the agent across its attempts (it shows in the agent's history).
 */
@Injectable()
export class AgentStep implements StepKind {
  readonly key = 'agent';
  readonly schema = { type: 'string', format: 'uuid' };
  readonly callsOut = true;
  readonly keepsExecution = true;

  constructor(private readonly agentSteps: AgentSteps) {}

  problems(step: StepDefinition, at: string, context: DefinitionContext) {
    return context.agentExists(step.agent!)
      ? []
      : [{ path: `${at}.agent`, message: `step '${step.id}': no agent ${step.agent} in this organization` }];
  }

  async run(context: StepContext): Promise<StepAnswer> {
    const { run, step, input, signal, pluginConfigs, executionId, callId } = context;
    const agent = await this.agent(context);
    if (!agent) return { status: 'failed', error: { code: 'AGENT_NOT_FOUND', message: `Agent ${step.agent} no longer exists` } };
    return this.agentSteps.attempt({
      agent,
      executionId: executionId!,
      runId: run.id,
      depth: run.depth,
      person: personBehind(run.triggeredBy),
      stepId: callId,
      input,
      timeoutMs: step.timeoutMs ?? agent.timeoutMs,
      pluginConfig: await pluginConfigs.get(run.organizationId, agent.kind),
      cancel: signal,
    });
  }

  async defaultAttempts(context: StepContext): Promise<number> {
    return (await this.agent(context))?.maxAttempts ?? 1;
  }

  /** The execution ends with the step (canceled when the run stopped it). */
  async settle(context: StepContext, outcome: Outcome): Promise<void> {
    const agent = await this.agent(context);
    if (!agent || !context.executionId) return;
    await this.agentSteps.finish(
      agent,
      context.executionId,
      context.signal.aborted && outcome.status !== 'succeeded' ? canceled() : outcome,
    );
  }

  private agent({ run, step, memo }: StepContext): Promise<Agent | null> {
    return memo(`agent:${step.agent}`, () => this.agentSteps.agent(run.organizationId, step.agent!));
  }
}
