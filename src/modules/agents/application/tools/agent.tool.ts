import { Injectable, OnModuleInit } from '@nestjs/common';
import { withPerson } from '../../../../shared/auth/principal';
import { stableUuid } from '../../../../shared/crypto/stable-uuid';
import { ErrorDetail } from '../../../../shared/errors/domain-error';
import { UUID } from '../../../../shared/http/uuid-param.pipe';
import { MAX_NESTING_DEPTH } from '../../../../shared/jobs/nesting';
import { CapabilityRunner, PluginConfigs } from '../../../plugins/application/capability-runner';
import { ToolResult } from '../../../plugins/domain/agent-loop';
import { AgentRepository } from '../../domain/agent.repository';
import { AgentSteps } from '../agent-steps';
import { AgentUsage } from '../agents.service';
import { toolResult } from './action.tool';
import { AgentTools } from './agent-tools';
import { ToolConfig, ToolDescription, ToolInvocation, toolName, ToolSource } from './tool-source';

/**
 * `{ "agent": "<id>" }`: another agent of the organization, its input the model's arguments.
 * Each call is an execution of that agent (in its history, triggered by the calling
 * execution) carried by the caller's attempt: its id comes from the call's idempotency key,
 * so an attempt after a crash finds it, finished or not, instead of starting another.
 */
@Injectable()
export class AgentToolSource implements ToolSource, OnModuleInit {
  readonly key = 'agent';
  private readonly configs: PluginConfigs;

  constructor(
    private readonly agents: AgentRepository,
    private readonly steps: AgentSteps,
    private readonly tools: AgentTools,
    private readonly usage: AgentUsage,
    runner: CapabilityRunner,
  ) {
    this.configs = runner.configs(1000);
  }

  onModuleInit(): void {
    this.tools.register(this);
    this.usage.register(async (organizationId, id) =>
      (await this.agents.namesWithTool(organizationId, 'agent', id)).map((name) => `agent '${name}' (as a tool)`),
    );
  }

  async describe(organizationId: string, tool: ToolConfig, path: string): Promise<ToolDescription | ErrorDetail[]> {
    const id = tool.agent;
    const agent = typeof id === 'string' && UUID.test(id) ? await this.agents.find(organizationId, id) : null;
    if (!agent) return [{ path: `${path}.agent`, message: `no agent '${String(id)}' in this organization` }];
    return {
      defaultName: toolName('agent_', agent.name),
      description: agent.toProps().description || `Agent '${agent.name}'`,
      parameters: agent.inputSchema,
    };
  }

  async call(tool: ToolConfig, invocation: ToolInvocation): Promise<ToolResult> {
    if (invocation.depth + 1 > MAX_NESTING_DEPTH)
      return {
        status: 'failed',
        error: { code: 'AGENT_DEPTH_LIMIT', message: `Runs and executions start one another at most ${MAX_NESTING_DEPTH} deep` },
      };
    const agent = await this.agents.find(invocation.organizationId, tool.agent as string);
    if (!agent) return { status: 'failed', error: { code: 'AGENT_NOT_FOUND', message: 'The agent no longer exists' } };
    const executionId = stableUuid(invocation.idempotencyKey);
    const outcome = await this.steps.runOwned({
      agent,
      executionId,
      triggeredBy: { type: 'agent_execution', id: invocation.executionId, ...withPerson(invocation.person) },
      idempotencyKey: invocation.idempotencyKey,
      input: invocation.input,
      timeoutMs: Math.max(1, Math.min(agent.timeoutMs, invocation.deadline - Date.now())),
      pluginConfig: await this.configs.get(agent.organizationId, agent.kind),
      cancel: invocation.signal,
      context: { executionId, calledBy: invocation.executionId },
      depth: invocation.depth + 1,
    });
    // Cut short with the caller: left unfinished, so the caller's next attempt runs it again.
    if (invocation.signal.aborted) return toolResult(outcome);
    await this.steps.finish(agent, executionId, outcome);
    return toolResult(outcome);
  }
}
