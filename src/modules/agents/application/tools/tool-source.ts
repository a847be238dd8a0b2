import { ErrorDetail } from '../../../../shared/errors/domain-error';
import { JsonSchema } from '../../../plugins/domain/plugin';
import { ToolResult } from '../../../plugins/domain/agent-loop';

/** A tool as an agent's config names it: `{ "<source key>": ..., "name"?, "description"?, "parameters"? }`. */
export type ToolConfig = Record<string, unknown> & { name?: string; description?: string; parameters?: JsonSchema };

/** What a source says of one of its tools; the tool's own `name`, `description` and `parameters` win. */
export interface ToolDescription {
  /** A name derived from what the tool calls (the model sees `name` when the tool gives one). */
  defaultName: string;
  description: string;
  /** The input schema of what it calls, when that has one. */
  parameters: JsonSchema | null;
}

/** One call of a tool: everything a source needs to run it once, and again after a crash. */
export interface ToolInvocation {
  organizationId: string;
  /** The execution whose model asked for the call. */
  executionId: string;
  /** `<executionId>:<turn>:<callId>`: the same on every attempt, passed on to what the tool calls. */
  idempotencyKey: string;
  input: unknown;
  /** Aborts with the execution (cancel, timeout, lost lease). */
  signal: AbortSignal;
  /** When the execution times out (epoch ms). */
  deadline: number;
  /** How deep the calling execution is among runs and executions starting one another (0: started on its own). */
  depth: number;
  /** The person behind the calling execution, who is behind what the tool starts too. */
  person?: string;
}

/**
 * Where an agent's tools come from: plugin actions, agents, workflows, MCP servers. A source is
 * one file implementing this, registered with `AgentTools.register`; a tool names its source by
 * the source's key (`{ "action": "transform.jsonata" }`).
 */
export interface ToolSource {
  /** The config key that marks a tool of this source. */
  readonly key: string;
  /** The tool as it stands in the organization, or why it cannot be used (details under `path`). */
  describe(organizationId: string, tool: ToolConfig, path: string): Promise<ToolDescription | ErrorDetail[]>;
  /** Runs the tool; a failure of what it calls is a `failed` result, not a throw. */
  call(tool: ToolConfig, invocation: ToolInvocation): Promise<ToolResult>;
}

/** A name for the model from any text: `[a-zA-Z0-9_-]`, at most 64 characters. */
export function toolName(prefix: string, text: string): string {
  const slug = text
    .replace(/[^a-zA-Z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
  return `${prefix}${slug || 'tool'}`.slice(0, 64);
}
