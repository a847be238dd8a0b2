import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { expressionProblem, rootFieldsUnder } from '../../../shared/expressions/expression-check';
import { tenantSchemaProblems } from '../../../shared/json-schema/json-schema.validator';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { AgentsService, AgentUsage } from '../../agents/application/agents.service';
import { PluginRegistry } from '../../plugins/application/plugin-registry';
import { PluginsService } from '../../plugins/application/plugins.service';
import { PluginUsage } from '../../plugins/domain/installation.repository';
import { connectionOf, installationSlug } from '../../plugins/domain/plugin';
import { DefinitionContext, JsonObject, WORKFLOW_LIMITS, workflowDefinitionSchema } from '../domain/definition';
import { UUID } from '../../../shared/http/uuid-param.pipe';
import { agentNode, refuseStartCycle, StartGraph, workflowNode } from './start-cycles';
import { StepRules } from './step-rules';
import { Workflow } from '../domain/workflow';
import { WorkflowRepository, WorkflowVersion } from '../domain/workflow.repository';

export function workflowNotFound(): DomainError {
  return new DomainError('WORKFLOW_NOT_FOUND', 'No such workflow');
}

@Injectable()
export class WorkflowsService implements OnModuleInit {
  /** What goes with a deleted workflow (its schedules and triggers), in the delete's transaction. */
  private readonly deletions: Array<(organizationId: string, workflowId: string) => Promise<unknown>> = [];

  constructor(
    private readonly workflows: WorkflowRepository,
    private readonly agents: AgentsService,
    private readonly plugins: PluginsService,
    private readonly registry: PluginRegistry,
    private readonly agentUsage: AgentUsage,
    private readonly pluginUsage: PluginUsage,
    private readonly kinds: StepRules,
    private readonly audit: AuditTrail,
  ) {}

  onModuleInit(): void {
    this.agentUsage.register(async (organizationId, agentId) =>
      (await this.workflows.namesUsingAgent(organizationId, agentId)).map((name) => `workflow '${name}'`),
    );
    this.pluginUsage.register(async (organizationId, slug) =>
      (await this.workflows.namesUsingPlugin(organizationId, slug)).map((name) => `workflow '${name}'`),
    );
    this.agents.checkChanges((agent) =>
      refuseStartCycle(this.graph(agent.organizationId), { kind: 'agent', id: agent.id }, agentNode(agent.name, agent.config)),
    );
  }

  /** The JSON Schema a definition's shape is checked against, with the step kinds this service runs. */
  definitionSchema(): JsonObject {
    return workflowDefinitionSchema(this.kinds.all);
  }

  async get(organizationId: string, id: string): Promise<Workflow> {
    const workflow = await this.workflows.find(organizationId, id);
    if (!workflow) throw workflowNotFound();
    return workflow;
  }

  list(caller: Principal, page: PageRequest): Promise<Page<Workflow>> {
    return this.workflows.list(caller.organizationId, page);
  }

  @Transactional()
  async create(caller: Principal, definition: unknown): Promise<Workflow> {
    const workflow = Workflow.define(
      { organizationId: caller.organizationId, definition, createdBy: caller.userId },
      await this.context(caller.organizationId, definition),
    );
    await this.workflows.insert(workflow);
    await this.audit.record({ ...audited(workflow, 'workflow.created'), changes: { after: described(workflow) } });
    return workflow;
  }

  @Transactional()
  async redefine(caller: Principal, id: string, definition: unknown): Promise<Workflow> {
    const workflow = await this.get(caller.organizationId, id);
    const before = described(workflow);
    workflow.redefine(definition, await this.context(caller.organizationId, definition));
    const { organizationId } = workflow.toProps();
    await refuseStartCycle(this.graph(organizationId), { kind: 'workflow', id }, workflowNode(workflow.definition));
    await this.workflows.addVersion(workflow, caller.userId);
    await this.audit.record({ ...audited(workflow, 'workflow.version_created'), changes: changedFields(before, described(workflow)) });
    return workflow;
  }

  /** The organization's saved workflows and agents, as the cycle check follows them. */
  private graph(organizationId: string): StartGraph {
    return {
      workflow: async (id) => (UUID.test(id) ? ((await this.workflows.find(organizationId, id))?.definition ?? null) : null),
      agent: (id) => this.agents.find(organizationId, id),
    };
  }

  async versions(caller: Principal, id: string, page: PageRequest): Promise<Page<WorkflowVersion>> {
    await this.get(caller.organizationId, id);
    return this.workflows.versions(caller.organizationId, id, page);
  }

  /** Registers what goes with a deleted workflow (the triggers module's schedules and webhook triggers). */
  onDelete(deleted: (organizationId: string, workflowId: string) => Promise<unknown>): void {
    this.deletions.push(deleted);
  }

  /**
   * Runs stay readable; a run in flight finishes with the version it pinned. What registered
   * with `onDelete` (its schedules and webhook triggers, with their events) goes with it, in the
   * same transaction.
   */
  @Transactional()
  async delete(caller: Principal, id: string): Promise<void> {
    const workflow = await this.get(caller.organizationId, id);
    if (!(await this.workflows.delete(caller.organizationId, id))) throw workflowNotFound();
    for (const deleted of this.deletions) await deleted(caller.organizationId, id);
    await this.audit.record({ ...audited(workflow, 'workflow.deleted'), changes: { before: described(workflow) } });
  }

  /** The stored configs of the connections (MCP servers) whose actions the steps name, by slug: what describes those actions. */
  private async connectionConfigs(organizationId: string, actions: string[]): Promise<Map<string, Record<string, unknown>>> {
    const slugs = [...new Set(actions.map(installationSlug))].filter((slug) => connectionOf(slug)).slice(0, WORKFLOW_LIMITS.steps);
    const found = await Promise.all(slugs.map(async (slug) => [slug, await this.plugins.find(organizationId, slug)] as const));
    return new Map(found.flatMap(([slug, installation]) => (installation ? [[slug, installation.config] as const] : [])));
  }

  /** What the definition's references resolve to in this organization, looked up once. */
  private async context(organizationId: string, definition: unknown): Promise<DefinitionContext> {
    const { steps, onFailure } = (definition ?? {}) as { steps?: unknown; onFailure?: unknown };
    const all = [...(Array.isArray(steps) ? steps : []), onFailure] as Array<JsonObject | undefined>;
    const referenced = (field: string) =>
      all.flatMap((s) => (typeof s?.[field] === 'string' ? [s[field] as string] : []).concat(innerReference(s, field)));
    const [agents, installed, workflows, connections] = await Promise.all([
      this.agents.existingIds(organizationId, referenced('agent')),
      this.plugins.installedSlugs(organizationId),
      Promise.all(
        [...new Set(referenced('workflow'))]
          .filter((id) => UUID.test(id))
          .slice(0, WORKFLOW_LIMITS.steps)
          .map(async (id) => ((await this.workflows.find(organizationId, id)) ? id : null)),
      ),
      this.connectionConfigs(organizationId, referenced('action')),
    ]);
    const existing = new Set(agents);
    const existingWorkflows = new Set(workflows);
    const installedSlugs = new Set(installed);
    return {
      kinds: this.kinds.all,
      agentExists: (id) => existing.has(id),
      workflowExists: (id) => existingWorkflows.has(id),
      action: (qualified) => {
        if (!installedSlugs.has(installationSlug(qualified))) return 'plugin-not-installed';
        if (!this.registry.capability('actions', qualified)) return 'unknown';
        return this.registry.manifest('actions', qualified, connections.get(installationSlug(qualified)) ?? null) ? 'ok' : 'unknown';
      },
      actionConfigProblems: (qualified, config) =>
        this.registry
          .configProblems('actions', qualified, config, 'with', connections.get(installationSlug(qualified)) ?? null)
          .map((d) => ({ ...d, path: d.path.replace(/^with\.?/, '') })),
      compileProblem: (expression) => expressionProblem(expression),
      stepsRead: (expression) => rootFieldsUnder(expression, 'steps'),
      schemaProblems: (schema, root) => tenantSchemaProblems(schema, root),
    };
  }
}

function audited(workflow: Workflow, action: 'workflow.created' | 'workflow.version_created' | 'workflow.deleted') {
  return { organizationId: workflow.organizationId, action, target: { type: 'workflow', id: workflow.id, name: workflow.name } };
}

/** A workflow as the audit log shows it: its name and current version (the versions themselves are kept with the workflow). */
function described(workflow: Workflow) {
  return { name: workflow.name, version: workflow.version };
}

/** A reference in a map's inner step. */
function innerReference(step: JsonObject | undefined, field: string): string[] {
  const inner = (step?.map as JsonObject | undefined)?.step as JsonObject | undefined;
  return typeof inner?.[field] === 'string' ? [inner[field] as string] : [];
}
