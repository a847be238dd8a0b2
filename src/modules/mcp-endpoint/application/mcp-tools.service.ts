import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../../config/app-config';
import { mcpTriggerOf, Principal } from '../../../shared/auth/principal';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';
import { Failure } from '../../../shared/jobs/outcome';
import { AgentsService } from '../../agents/application/agents.service';
import { ExecutionsService } from '../../agents/application/executions.service';
import { isFinished } from '../../agents/domain/execution';
import { RunsService } from '../../runs/application/runs.service';
import { isRunFinished, Run } from '../../runs/domain/run';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { JsonObject, McpTool, McpToolTarget, structuredOf, TOOL_SCOPES, toolCatalog } from '../domain/mcp-tool';

/** Tools an organization serves at most, of each kind (the oldest exposed ones). */
export const MAX_TOOLS_PER_KIND = 500;

/** How long an organization's tools, once read, are served without reading them again. */
export const CATALOG_TTL_MS = 2000;

/** How often a watched run or execution is read again when no change was announced. */
const PROGRESS_SLICE_MS = 1000;

/** A step, or the run or execution itself, progressed: `progress` grows with each one. */
export interface ToolProgress {
  progress: number;
  total?: number;
  message: string;
}

/** What a tools/call answers, before it is put in MCP's terms. */
export interface ToolOutcome {
  isError: boolean;
  text: string;
  structured?: JsonObject;
  /** The run or execution the call started (in the result's `_meta`). */
  meta?: JsonObject;
}

function allows(caller: Principal, scope: Scope): boolean {
  const { credential } = caller;
  return credential.type === 'session' || credential.scopes === null || credential.scopes.includes(scope);
}

function failed(error: Failure | DomainError): ToolOutcome {
  const details =
    error instanceof DomainError && error.details?.length ? `: ${error.details.map((d) => `${d.path}: ${d.message}`).join('; ')}` : '';
  return {
    isError: true,
    text: `${error.code}: ${error.message}${details}`,
    structured: { error: { code: error.code, message: error.message } },
  };
}

/**
 * The organization's exposed workflows and agents as MCP tools: which the caller sees, and a
 * call of one, run exactly as `POST /api/workflows/:id/run` and `POST /api/agents/:id/execute`
 * run them (same services, same input check, same queue and fair share), triggered by `mcp`.
 */
@Injectable()
export class McpToolsService {
  private readonly waitSeconds: number;
  private readonly catalogs = new LRUCache<string, Promise<McpTool[]>>({ max: 1000, ttl: CATALOG_TTL_MS });

  constructor(
    private readonly workflows: WorkflowRepository,
    private readonly agents: AgentsService,
    private readonly runs: RunsService,
    private readonly executions: ExecutionsService,
    config: AppConfig,
  ) {
    this.waitSeconds = config.mcp.waitSeconds;
  }

  /** The tools the caller may see: workflows with `workflows:read`, agents with `agents:read` (keys with scopes). */
  async list(caller: Principal): Promise<McpTool[]> {
    const tools = await this.catalog(caller.organizationId);
    return tools.filter((t) => allows(caller, TOOL_SCOPES[t.target.kind].read));
  }

  /** The tool of the caller's organization with this name (null: none, in this organization). */
  async find(caller: Principal, name: string): Promise<McpTool | null> {
    return (await this.catalog(caller.organizationId)).find((t) => t.name === name) ?? null;
  }

  /**
   * Runs the tool with `args` as input and waits MCP_WAIT_SECONDS for it. A run or execution that
   * outlasts the wait is no error: its id and status, and where to read it. `progress` (when the
   * client asked for it) hears of the start and of each step that ends.
   */
  async call(caller: Principal, tool: McpTool, args: unknown, progress?: (p: ToolProgress) => Promise<void>): Promise<ToolOutcome> {
    const { kind } = tool.target;
    const scope = TOOL_SCOPES[kind].call;
    if (!allows(caller, scope)) return failed(new DomainError('FORBIDDEN', `The API key lacks the scope '${scope}'`));
    if (caller.role === 'viewer')
      return failed(new DomainError('FORBIDDEN', `The viewer role may not ${kind === 'workflow' ? 'run workflows' : 'execute agents'}`));
    try {
      return kind === 'workflow'
        ? await this.runWorkflow(caller, tool, args, progress)
        : await this.executeAgent(caller, tool, args, progress);
    } catch (error) {
      if (error instanceof DomainError) return failed(error);
      throw error;
    }
  }

  /**
   * The organization's tools, read at most once per CATALOG_TTL_MS (a workflow exposed or
   * changed now is served within that); a read that failed is forgotten at once.
   */
  private catalog(organizationId: string): Promise<McpTool[]> {
    let tools = this.catalogs.get(organizationId);
    if (!tools) {
      tools = this.readCatalog(organizationId);
      tools.catch(() => this.catalogs.delete(organizationId));
      this.catalogs.set(organizationId, tools);
    }
    return tools;
  }

  private async readCatalog(organizationId: string): Promise<McpTool[]> {
    const [workflows, agents] = await Promise.all([
      this.workflows.exposed(organizationId, MAX_TOOLS_PER_KIND),
      this.agents.exposed(organizationId, MAX_TOOLS_PER_KIND),
    ]);
    const targets: McpToolTarget[] = [
      ...workflows.map((w) => ({
        kind: 'workflow' as const,
        id: w.id,
        name: w.name,
        description: w.definition.mcp?.description ?? w.definition.description ?? '',
        inputSchema: w.definition.inputSchema ?? null,
      })),
      ...agents.map((a) => ({
        kind: 'agent' as const,
        id: a.id,
        name: a.name,
        description: a.mcp?.description ?? a.toProps().description,
        inputSchema: a.inputSchema,
      })),
    ];
    return toolCatalog(targets);
  }

  private async runWorkflow(
    caller: Principal,
    tool: McpTool,
    args: unknown,
    progress?: (p: ToolProgress) => Promise<void>,
  ): Promise<ToolOutcome> {
    const workflowId = tool.target.id;
    const submitted = await this.runs.enqueue(caller.organizationId, { workflowId, input: args, triggeredBy: mcpTriggerOf(caller) });
    const started = submitted.record;
    const settled = this.runs.settle(submitted, this.waitSeconds);
    if (progress) {
      const total = started.steps.length;
      const ended = (run: Run) => run.steps.filter((s) => ['succeeded', 'failed', 'skipped', 'canceled'].includes(s.status)).length;
      await this.follow(settled, progress, { progress: 0, total, message: `Run ${started.id} queued` }, (last) =>
        this.runs.watch(started.id, PROGRESS_SLICE_MS, async () => {
          const run = await this.runs.getLive(caller, workflowId, started.id);
          const done = ended(run);
          return done > last ? { progress: done, total, message: `${done} of ${total} steps done` } : null;
        }),
      );
    }
    const run = await settled;
    const meta = { runId: run.id, workflowId };
    if (!isRunFinished(run)) {
      return {
        isError: false,
        text:
          `Run ${run.id} is ${run.status} after ${this.waitSeconds} s. Read its outcome with GET /api/workflows/${workflowId}/runs/${run.id} ` +
          `(or follow it at .../events).`,
        structured: { runId: run.id, status: run.status },
        meta,
      };
    }
    if (run.status !== 'succeeded') return { ...failed(run.error ?? { code: 'RUN_FAILED', message: `The run ended ${run.status}` }), meta };
    return { isError: false, text: JSON.stringify(run.output ?? null), structured: structuredOf(run.output), meta };
  }

  private async executeAgent(
    caller: Principal,
    tool: McpTool,
    args: unknown,
    progress?: (p: ToolProgress) => Promise<void>,
  ): Promise<ToolOutcome> {
    const agentId = tool.target.id;
    let watching: Promise<void> | undefined;
    const settled = this.executions.execute(
      caller.organizationId,
      { agentId, input: args, waitSeconds: this.waitSeconds, triggeredBy: mcpTriggerOf(caller) },
      (queued) => {
        if (!progress) return;
        const steps = ['queued', 'running'];
        watching = this.follow(settled, progress, { progress: 0, message: `Execution ${queued.id} queued` }, (last) =>
          this.executions.watch(queued.id, PROGRESS_SLICE_MS, async () => {
            const found = await this.executions.find(caller.organizationId, agentId, queued.id);
            const at = found ? (isFinished(found) ? 2 : steps.indexOf(found.status)) : -1;
            return at > last ? { progress: at, message: `Execution ${queued.id} ${found!.status}` } : null;
          }),
        );
      },
    );
    const execution = await settled;
    await watching;
    const meta = { executionId: execution.id, agentId };
    if (!isFinished(execution)) {
      return {
        isError: false,
        text:
          `Execution ${execution.id} is ${execution.status} after ${this.waitSeconds} s. Read its outcome with ` +
          `GET /api/agents/${agentId}/history/${execution.id} (or follow it at .../events).`,
        structured: { executionId: execution.id, status: execution.status },
        meta,
      };
    }
    if (execution.status !== 'succeeded')
      return { ...failed(execution.error ?? { code: 'EXECUTION_FAILED', message: `The execution ended ${execution.status}` }), meta };
    return { isError: false, text: JSON.stringify(execution.output ?? null), structured: structuredOf(execution.output), meta };
  }

  /**
   * Sends `first`, then what `next` reports (called with the last progress sent) until `settled`
   * settles; answers once `first` went out. Progress is best effort: a failure to read or to
   * send ends the following, never the call.
   */
  private async follow<T>(
    settled: Promise<T>,
    send: (p: ToolProgress) => Promise<void>,
    first: ToolProgress,
    next: (last: number) => Promise<ToolProgress | null>,
  ): Promise<void> {
    let done = false;
    void settled.finally(() => (done = true)).catch(() => undefined);
    await send(first).catch(() => (done = true));
    let last = first.progress;
    void (async () => {
      while (!done) {
        const update = await next(last);
        if (done) return;
        if (!update) continue;
        last = update.progress;
        await send(update);
      }
    })().catch(() => undefined);
  }
}
