import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { UUID } from '../../../shared/http/uuid-param.pipe';
import { tenantSchemaProblems } from '../../../shared/json-schema/json-schema.validator';
import { mcpExposureProblems, McpExposure } from '../../../shared/mcp/mcp-exposure';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { UsageChecks } from '../../../shared/usage/usage-checks';
import { PluginRegistry } from '../../plugins/application/plugin-registry';
import { pluginNotFound, PluginsService } from '../../plugins/application/plugins.service';
import { PluginUsage } from '../../plugins/domain/installation.repository';
import { Agent, AGENT_LIMITS, AgentChanges, JsonObject } from '../domain/agent';
import { AgentRepository } from '../domain/agent.repository';
import { AgentTools, invalidTools } from './tools/agent-tools';

/** What uses an agent: workflows register their check here; delete asks it. */
export class AgentUsage extends UsageChecks {}

export interface AgentDefinition {
  name: string;
  description?: string;
  kind: string;
  config?: JsonObject;
  inputSchema?: JsonObject | null;
  mcp?: McpExposure | null;
  timeoutMs?: number;
  maxAttempts?: number;
}

export function agentNotFound(): DomainError {
  return new DomainError('AGENT_NOT_FOUND', 'No such agent');
}

@Injectable()
export class AgentsService implements OnModuleInit {
  private readonly changeChecks: Array<(agent: Agent) => Promise<void>> = [];

  constructor(
    private readonly agents: AgentRepository,
    private readonly plugins: PluginsService,
    private readonly registry: PluginRegistry,
    private readonly pluginUsage: PluginUsage,
    private readonly usage: AgentUsage,
    private readonly tools: AgentTools,
    private readonly audit: AuditTrail,
  ) {}

  onModuleInit(): void {
    this.pluginUsage.register(async (organizationId, slug) =>
      (await this.agents.namesUsingPlugin(organizationId, slug)).map((name) => `agent '${name}'`),
    );
  }

  /** A check of an agent about to be saved with its changes, which refuses it by throwing (workflows register their cycle check). */
  checkChanges(check: (agent: Agent) => Promise<void>): void {
    this.changeChecks.push(check);
  }

  /** The agent, or null (a malformed id is none). */
  find(organizationId: string, id: string): Promise<Agent | null> {
    return UUID.test(id) ? this.agents.find(organizationId, id) : Promise.resolve(null);
  }

  async get(organizationId: string, id: string): Promise<Agent> {
    const agent = await this.agents.find(organizationId, id);
    if (!agent) throw agentNotFound();
    return agent;
  }

  /** Which of these ids are agents of the organization (malformed ids are not). */
  existingIds(organizationId: string, ids: string[]): Promise<string[]> {
    return this.agents.existing(
      organizationId,
      ids.filter((id) => UUID.test(id)),
    );
  }

  list(caller: Principal, page: PageRequest, kind?: string): Promise<Page<Agent>> {
    return this.agents.list(caller.organizationId, page, kind);
  }

  @Transactional()
  async create(caller: Principal, definition: AgentDefinition): Promise<Agent> {
    const config = definition.config ?? {};
    await this.assertValid(caller.organizationId, definition.kind, config, definition.inputSchema ?? null);
    assertMcpExposure(definition.mcp);
    const agent = Agent.create({
      organizationId: caller.organizationId,
      name: definition.name,
      description: definition.description ?? '',
      kind: definition.kind,
      config,
      inputSchema: definition.inputSchema ?? null,
      mcp: definition.mcp ?? null,
      timeoutMs: definition.timeoutMs ?? AGENT_LIMITS.timeoutMs.default,
      maxAttempts: definition.maxAttempts ?? AGENT_LIMITS.maxAttempts.default,
      createdBy: caller.userId,
    });
    await this.agents.insert(agent);
    await this.audit.record({ ...audited(agent, 'agent.created'), changes: { after: described(agent) } });
    return agent;
  }

  @Transactional()
  async change(caller: Principal, id: string, changes: AgentChanges): Promise<Agent> {
    const agent = await this.get(caller.organizationId, id);
    const inputSchema = changes.inputSchema === undefined ? agent.inputSchema : changes.inputSchema;
    await this.assertValid(caller.organizationId, agent.kind, changes.config ?? agent.config, inputSchema);
    assertMcpExposure(changes.mcp);
    const before = described(agent);
    agent.change(changes);
    for (const check of this.changeChecks) await check(agent);
    // The event first: it commits with the update either way, and the row's lock, taken by the
    // update, is then held for no more than the update and the commit.
    await this.audit.record({ ...audited(agent, 'agent.updated'), changes: changedFields(before, described(agent)) });
    await this.agents.update(agent);
    return agent;
  }

  @Transactional()
  async delete(caller: Principal, id: string): Promise<void> {
    const agent = await this.get(caller.organizationId, id);
    const users = await this.usage.usersOf(caller.organizationId, agent.id);
    if (users.length) throw new DomainError('AGENT_IN_USE', `Agent '${agent.name}' is used by ${users.join(', ')}`);
    if (!(await this.agents.delete(caller.organizationId, id))) throw agentNotFound();
    await this.audit.record({ ...audited(agent, 'agent.deleted'), changes: { before: described(agent) } });
  }

  /** The organization's agents served as MCP tools, oldest first. */
  exposed(organizationId: string, limit: number): Promise<Agent[]> {
    return this.agents.exposed(organizationId, limit);
  }

  /** The kind's plugin must be installed, the kind must exist, the config and input schema must hold. */
  private async assertValid(organizationId: string, kind: string, config: JsonObject, inputSchema: JsonObject | null): Promise<void> {
    const [slug] = kind.split('.', 1);
    if (!this.registry.find(slug)) throw pluginNotFound(slug);
    await this.plugins.get(organizationId, slug);
    if (!this.registry.capability('agentKinds', kind)) {
      throw new DomainError('VALIDATION_FAILED', `Plugin '${slug}' has no agent kind '${kind}'`, [
        { path: 'kind', message: `kind must be one of: ${this.kindsOf(slug).join(', ')}` },
      ]);
    }
    const problems = this.registry.configProblems('agentKinds', kind, config, 'config');
    if (problems.length) throw new DomainError('VALIDATION_FAILED', `The config of agent kind '${kind}' is not valid`, problems);
    const toolProblems = await this.tools.problems(organizationId, kind, config);
    if (toolProblems.length) throw invalidTools(toolProblems);
    if (inputSchema) {
      const details = tenantSchemaProblems(inputSchema, 'inputSchema');
      if (details.length) throw new DomainError('VALIDATION_FAILED', 'The inputSchema cannot be used', details);
    }
  }

  private kindsOf(slug: string): string[] {
    return (this.registry.find(slug)?.manifest.agentKinds ?? []).map((k) => `${slug}.${k.name}`);
  }
}

function audited(agent: Agent, action: 'agent.created' | 'agent.updated' | 'agent.deleted') {
  return { organizationId: agent.organizationId, action, target: { type: 'agent', id: agent.id, name: agent.name } };
}

/** An agent as the audit log shows it: its definition. */
function described(agent: Agent) {
  const { id: _id, organizationId: _org, createdBy: _by, createdAt: _at, updatedAt: _up, ...definition } = agent.toProps();
  return definition;
}

/** VALIDATION_FAILED naming every problem of an agent's `mcp` field (absent or null: not served). */
function assertMcpExposure(mcp: unknown): void {
  if (mcp === undefined || mcp === null) return;
  const details = mcpExposureProblems(mcp, 'mcp');
  if (details.length) throw new DomainError('VALIDATION_FAILED', 'The mcp field is not valid', details);
}
