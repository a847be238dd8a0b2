import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { DomainError, ErrorDetail } from '../../../../shared/errors/domain-error';
import { tenantSchemaProblems, tenantValueProblems } from '../../../../shared/json-schema/json-schema.validator';
import { Metrics } from '../../../../shared/metrics/metrics';
import { AgentJournal, AgentLoopPorts, ToolResult, ToolSpec } from '../../../plugins/domain/agent-loop';
import { PluginRegistry } from '../../../plugins/application/plugin-registry';
import { JsonObject } from '../../domain/agent';
import { TranscriptRepository } from '../../domain/transcript.repository';
import { AgentDeltas } from '../agent-deltas';
import { ExecutionJobs } from '../execution-jobs';
import { ToolConfig, ToolInvocation, ToolSource } from './tool-source';

/** An execution about to run an agent of a kind that calls tools. */
export interface LoopExecution {
  organizationId: string;
  executionId: string;
  kind: string;
  config: JsonObject;
  /** When the execution times out (epoch ms). */
  deadline: number;
  /** How deep it is among runs and executions starting one another (MAX_NESTING_DEPTH). */
  depth: number;
  /** The person behind it (personBehind its trigger): what its tools start is theirs too. */
  person?: string;
  /** Its first attempt: its journal is empty, and is not read. */
  first: boolean;
}

interface ResolvedTool {
  spec: ToolSpec;
  source: ToolSource;
  tool: ToolConfig;
}

/**
 * The tools of agents that call them (`llm.agent`): checked when an agent is saved, resolved
 * when an execution starts, and called through their sources. It also gives such an execution
 * its journal (the committed turns and calls) and its live deltas.
 */
@Injectable()
export class AgentTools {
  private readonly logger = new Logger('AgentTools');
  private readonly sources = new Map<string, ToolSource>();
  private readonly tokens: Counter<'organization' | 'model' | 'kind'>;

  constructor(
    private readonly registry: PluginRegistry,
    private readonly transcripts: TranscriptRepository,
    private readonly jobs: ExecutionJobs,
    private readonly deltas: AgentDeltas,
    metrics: Metrics,
  ) {
    this.tokens = new Counter({
      name: 'llm_tokens_total',
      help: 'Tokens of tool-calling agents by organization, model and kind (prompt or completion)',
      labelNames: ['organization', 'model', 'kind'],
      registers: [metrics.registry],
    });
  }

  register(source: ToolSource): void {
    this.sources.set(source.key, source);
  }

  /** Whether agents of this kind call tools. */
  usesTools(kind: string): boolean {
    return this.registry.manifest('agentKinds', kind)?.usesTools === true;
  }

  /** Every problem of the tools of a config, with paths under `config.tools`: sources, names, parameters. */
  async problems(organizationId: string, kind: string, config: JsonObject): Promise<ErrorDetail[]> {
    if (!this.usesTools(kind)) return [];
    return (await this.resolve(organizationId, toolsOf(config))).problems;
  }

  /**
   * The ports of one execution's loop; null with the reason when a tool can no longer be used
   * (a workflow deleted since the agent was saved).
   */
  async ports(execution: LoopExecution): Promise<AgentLoopPorts | ErrorDetail[]> {
    const { tools, problems } = await this.resolve(execution.organizationId, toolsOf(execution.config));
    if (problems.length) return problems;
    const byName = new Map(tools.map((t) => [t.spec.name, t]));
    return {
      tools: tools.map((t) => t.spec),
      journal: this.journal(execution),
      callTool: (call, signal) =>
        this.call(byName.get(call.name), call.arguments, signal, {
          organizationId: execution.organizationId,
          executionId: execution.executionId,
          idempotencyKey: `${execution.executionId}:${call.turn}:${call.callId}`,
          deadline: execution.deadline,
          depth: execution.depth,
          person: execution.person,
        }),
      delta: (turn, text) => this.deltas.emit(execution.executionId, turn, text),
    };
  }

  private journal(execution: LoopExecution): AgentJournal {
    const { organizationId, executionId } = execution;
    return {
      load: () => (execution.first ? Promise.resolve([]) : this.transcripts.load(executionId)),
      commitTurn: async (turn) => {
        await this.transcripts.commitTurn(organizationId, executionId, turn);
        const { model, usage } = turn.reply;
        this.tokens.inc({ organization: organizationId, model, kind: 'prompt' }, usage.promptTokens);
        this.tokens.inc({ organization: organizationId, model, kind: 'completion' }, usage.completionTokens);
        this.jobs.changed(executionId);
      },
      commitCall: async (turn, callId, result, finishedAt) => {
        await this.transcripts.commitCall(executionId, turn, callId, result, finishedAt);
        this.jobs.changed(executionId);
      },
    };
  }

  /**
   * Runs one call: an unknown tool or arguments that do not match its parameters are a failed
   * result the model reads. A call cut short by the execution's signal throws instead, so no
   * result is committed and the next attempt runs it again.
   */
  private async call(
    found: ResolvedTool | undefined,
    input: unknown,
    signal: AbortSignal,
    invocation: Omit<ToolInvocation, 'input' | 'signal'>,
  ): Promise<ToolResult> {
    if (!found)
      return { status: 'failed', error: { code: 'TOOL_NOT_FOUND', message: 'No tool has that name; call one of the tools offered' } };
    const problems = tenantValueProblems(found.spec.parameters, input, 'arguments');
    if (problems.length) {
      const message = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
      return {
        status: 'failed',
        error: { code: 'INVALID_ARGUMENTS', message: `The arguments do not match the tool's parameters: ${message}` },
      };
    }
    let result: ToolResult;
    try {
      result = await found.source.call(found.tool, { ...invocation, input, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      this.logger.error({ msg: `Tool '${found.spec.name}' failed unexpectedly`, executionId: invocation.executionId, err: error });
      result = { status: 'failed', error: { code: 'TOOL_FAILED', message: `Tool '${found.spec.name}' failed unexpectedly` } };
    }
    if (signal.aborted) throw signal.reason;
    return result;
  }

  /** The tools as the model is offered them, or every reason some cannot be. */
  private async resolve(organizationId: string, tools: ToolConfig[]): Promise<{ tools: ResolvedTool[]; problems: ErrorDetail[] }> {
    const problems: ErrorDetail[] = [];
    const resolved: ResolvedTool[] = [];
    const described = await Promise.all(tools.map((tool, i) => this.describe(organizationId, tool, `config.tools.${i}`)));
    described.forEach((d, i) => (Array.isArray(d) ? problems.push(...d) : resolved.push({ ...d, tool: tools[i] })));
    const seen = new Set<string>();
    resolved.forEach(({ spec }) => {
      if (seen.has(spec.name))
        problems.push({ path: 'config.tools', message: `two tools are named '${spec.name}': give one a distinct "name"` });
      seen.add(spec.name);
    });
    return { tools: resolved, problems };
  }

  private async describe(organizationId: string, tool: ToolConfig, path: string): Promise<Omit<ResolvedTool, 'tool'> | ErrorDetail[]> {
    const keys = [...this.sources.keys()].filter((key) => key in tool);
    if (keys.length !== 1)
      return [{ path, message: `a tool names exactly one of ${[...this.sources.keys()].map((k) => `"${k}"`).join(', ')}` }];
    const source = this.sources.get(keys[0])!;
    const description = await source.describe(organizationId, tool, path);
    if (Array.isArray(description)) return description;
    const parameters = tool.parameters ?? description.parameters;
    if (!parameters)
      return [
        {
          path: `${path}.parameters`,
          message: `${keys[0]} '${String(tool[keys[0]])}' has no input schema: give the tool "parameters" (a JSON Schema of its input)`,
        },
      ];
    const schemaIssues = tenantSchemaProblems(parameters, `${path}.parameters`);
    if (schemaIssues.length) return schemaIssues;
    return {
      source,
      spec: { name: tool.name ?? description.defaultName, description: tool.description ?? description.description, parameters },
    };
  }
}

function toolsOf(config: JsonObject): ToolConfig[] {
  return Array.isArray(config.tools) ? (config.tools as ToolConfig[]) : [];
}

/** VALIDATION_FAILED for a config whose tools cannot be used. */
export function invalidTools(details: ErrorDetail[]): DomainError {
  return new DomainError('VALIDATION_FAILED', 'The tools of the agent cannot be used', details);
}
