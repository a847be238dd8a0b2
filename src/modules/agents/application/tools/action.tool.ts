import { Injectable, OnModuleInit } from '@nestjs/common';
import { ErrorDetail } from '../../../../shared/errors/domain-error';
import { Outcome } from '../../../../shared/jobs/outcome';
import { CapabilityRunner, PluginConfigs } from '../../../plugins/application/capability-runner';
import { PluginRegistry } from '../../../plugins/application/plugin-registry';
import { ToolResult } from '../../../plugins/domain/agent-loop';
import { installationSlug } from '../../../plugins/domain/plugin';
import { PluginUsage } from '../../../plugins/domain/installation.repository';
import { AgentRepository } from '../../domain/agent.repository';
import { AgentTools } from './agent-tools';
import { ToolConfig, ToolDescription, ToolInvocation, toolName, ToolSource } from './tool-source';

/** `{ "action": "<plugin>.<action>", "with": {config} }`: a plugin action of an installed plugin, its input the model's arguments. */
@Injectable()
export class ActionTools implements ToolSource, OnModuleInit {
  readonly key = 'action';
  private readonly configs: PluginConfigs;

  constructor(
    private readonly registry: PluginRegistry,
    private readonly runner: CapabilityRunner,
    private readonly tools: AgentTools,
    private readonly agents: AgentRepository,
    private readonly pluginUsage: PluginUsage,
  ) {
    this.configs = runner.configs(1000);
  }

  onModuleInit(): void {
    this.tools.register(this);
    this.pluginUsage.register(async (organizationId, slug) =>
      (await this.agents.namesWithTool(organizationId, 'action', slug, true)).map((name) => `agent '${name}' (as a tool)`),
    );
  }

  async describe(organizationId: string, tool: ToolConfig, path: string): Promise<ToolDescription | ErrorDetail[]> {
    const action = tool.action;
    if (typeof action !== 'string' || !this.registry.capability('actions', action))
      return [{ path: `${path}.action`, message: `no plugin action '${String(action)}' in the catalog` }];
    const pluginConfig = await this.configs.get(organizationId, action);
    if (!pluginConfig)
      return [{ path: `${path}.action`, message: `plugin '${installationSlug(action)}' is not installed in this organization` }];
    const manifest = this.registry.manifest('actions', action, pluginConfig);
    if (!manifest) return [{ path: `${path}.action`, message: `'${installationSlug(action)}' offers no action '${action}'` }];
    const config = tool.with ?? {};
    if (typeof config !== 'object' || config === null || Array.isArray(config))
      return [{ path: `${path}.with`, message: 'must be an object' }];
    const problems = this.registry.configProblems('actions', action, config as Record<string, unknown>, `${path}.with`, pluginConfig);
    if (problems.length) return problems;
    return {
      defaultName: toolName('', action),
      description: manifest.description,
      parameters: this.registry.remainingInput(action, manifest, config as Record<string, unknown>),
    };
  }

  async call(tool: ToolConfig, invocation: ToolInvocation): Promise<ToolResult> {
    const action = tool.action as string;
    const outcome = await this.runner.run({
      kind: 'actions',
      qualified: action,
      organizationId: invocation.organizationId,
      pluginConfig: await this.configs.get(invocation.organizationId, action),
      config: (tool.with ?? {}) as Record<string, unknown>,
      input: invocation.input,
      timeoutMs: Math.max(1, invocation.deadline - Date.now()),
      idempotencyKey: invocation.idempotencyKey,
      cancel: invocation.signal,
      context: { executionId: invocation.executionId, tool: action },
    });
    return toolResult(outcome);
  }
}

/** An outcome as the model reads it. */
export function toolResult(outcome: Outcome): ToolResult {
  return outcome.status === 'succeeded' ? { status: 'succeeded', output: outcome.output } : { status: 'failed', error: outcome.error };
}
