import type { Scope } from '../../../shared/auth/scopes';

export type JsonObject = Record<string, unknown>;

/** What an organization serves at /api/mcp: its exposed workflows and agents. */
export type McpToolKind = 'workflow' | 'agent';

/** The scopes an API key needs to see a kind of tool, and to call it. */
export const TOOL_SCOPES: Record<McpToolKind, { read: Scope; call: Scope }> = {
  workflow: { read: 'workflows:read', call: 'workflows:run' },
  agent: { read: 'agents:read', call: 'agents:execute' },
};

/** An exposed workflow or agent, before it is named. */
export interface McpToolTarget {
  kind: McpToolKind;
  id: string;
  name: string;
  description: string;
  inputSchema: JsonObject | null;
}

/** A tool as MCP clients see it, and what it runs. */
export interface McpTool {
  /** `workflow_<name>` / `agent_<name>`: `[a-z0-9_-]`, at most 64 characters, unique in the organization. */
  name: string;
  description: string;
  inputSchema: JsonObject;
  target: McpToolTarget;
}

/** The longest tool name MCP clients take everywhere (SEP-986 allows 128; several clients cut at 64). */
const MAX_NAME = 64;

function slug(text: string): string {
  return (
    text
      .replace(/[^a-zA-Z0-9_-]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .toLowerCase() || 'tool'
  );
}

/**
 * Names the targets as MCP tools: `workflow_<name>` or `agent_<name>` (the name's characters
 * outside `[a-zA-Z0-9_-]` as `_`, lower case, at most 64 characters). Names that collide are
 * told apart deterministically: in the order given (oldest first), the first keeps the name,
 * the next ones get `_2`, `_3`, ... (cut to fit 64). A tool's input schema is the target's, or
 * `{ "type": "object" }` without one.
 */
export function toolCatalog(targets: readonly McpToolTarget[]): McpTool[] {
  const taken = new Set<string>();
  return targets.map((target) => {
    const base = `${target.kind}_${slug(target.name)}`.slice(0, MAX_NAME);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX_NAME - `_${n}`.length)}_${n}`;
    taken.add(name);
    return {
      name,
      description: target.description || `${target.kind === 'workflow' ? 'Workflow' : 'Agent'} '${target.name}'`,
      inputSchema: target.inputSchema ?? { type: 'object' },
      target,
    };
  });
}

/** MCP's `structuredContent` must be an object: an output that is one as it is, any other as `{ "result": <output> }`. */
export function structuredOf(output: unknown): JsonObject {
  return output !== null && typeof output === 'object' && !Array.isArray(output) ? (output as JsonObject) : { result: output ?? null };
}
