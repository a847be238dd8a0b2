import { Injectable } from '@nestjs/common';
import { failed, Outcome } from '../../../shared/jobs/outcome';
import { CapabilityCall, CapabilityRunner } from '../../plugins/application/capability-runner';
import { JsonObject } from '../domain/agent';
import { AgentTools } from './tools/agent-tools';

/** One attempt of an execution, whoever carries it (its own job, a run's step, another agent's tool call). */
export interface AgentAttempt extends Omit<CapabilityCall, 'kind' | 'qualified' | 'organizationId' | 'config' | 'agentLoop'> {
  agent: { organizationId: string; kind: string; config: JsonObject };
  executionId: string;
  /** How deep the execution is among runs and executions starting one another (0: started on its own). */
  depth: number;
  /** The person behind the execution (personBehind its trigger). */
  person?: string;
  /** The execution's first attempt: nothing was committed before it, so its journal is not read. */
  first: boolean;
}

/** Runs an agent's kind once; a kind that calls tools gets its tools and its journal. */
@Injectable()
export class AgentRunner {
  constructor(
    private readonly runner: CapabilityRunner,
    private readonly tools: AgentTools,
  ) {}

  async run(attempt: AgentAttempt): Promise<Outcome> {
    const { agent, executionId, depth, person, first, ...call } = attempt;
    const base = {
      ...call,
      kind: 'agentKinds' as const,
      qualified: agent.kind,
      organizationId: agent.organizationId,
      config: agent.config,
    };
    if (!this.tools.usesTools(agent.kind)) return this.runner.run(base);
    const ports = await this.tools.ports({
      organizationId: agent.organizationId,
      executionId,
      kind: agent.kind,
      config: agent.config,
      deadline: Date.now() + call.timeoutMs,
      depth,
      person,
      first,
    });
    if (Array.isArray(ports))
      return failed(
        'TOOL_UNAVAILABLE',
        `A tool of the agent can no longer be used: ${ports.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
      );
    return this.runner.run({ ...base, agentLoop: ports });
  }
}
