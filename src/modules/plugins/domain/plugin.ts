/**
 * The plugin contract. A plugin is a folder under `catalog/<slug>/` exporting one `Plugin`,
 * plus one line in `catalog/index.ts`. The agent and workflow engines call `execute` on its
 * agent kinds and actions; nothing else in the service knows a plugin's internals.
 */
import type { AgentLoopPorts } from './agent-loop';

export type JsonSchema = Record<string, unknown>;

export interface CapabilityManifest {
  /** Unqualified name; the qualified one is `<plugin slug>.<name>` (e.g. `http.agent`). */
  name: string;
  description: string;
  /** JSON Schema of the agent's or step's own configuration. */
  configSchema: JsonSchema;
  /** JSON Schema of the input, where the capability constrains it. */
  inputSchema?: JsonSchema;
  /**
   * The kind calls tools (`config.tools`): the service checks each tool when the config is
   * saved, and runs the kind with `agentLoop` (see agent-loop.ts).
   */
  usesTools?: boolean;
}

export interface PluginManifest {
  slug: string;
  name: string;
  /** Semantic version. */
  version: string;
  description: string;
  /** JSON Schema of the installation's configuration. */
  configSchema: JsonSchema;
  /** Top-level installation config fields stored encrypted and never returned or logged. */
  secretFields: string[];
  /**
   * Fields that say where the secrets go (an API root): changing one drops the stored secrets
   * unless the same change enters them again, so a secret never follows a new destination.
   */
  secretDestinationFields?: string[];
  agentKinds: CapabilityManifest[];
  actions: CapabilityManifest[];
}

export interface PluginLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface ExecuteRequest {
  /** Whose call it is (shared machinery, such as the expression sandbox, is shared by organization). */
  organizationId: string;
  /** The installation's config, secrets decrypted. */
  pluginConfig: Record<string, unknown>;
  /** The agent's or step's config, already valid against the capability's configSchema. */
  config: Record<string, unknown>;
  input: unknown;
  /** Aborted on cancel or when `timeoutMs` passes; implementations must stop promptly. */
  signal: AbortSignal;
  timeoutMs: number;
  /** Stable across retries of the same execution or step; passed on to remote agents. */
  idempotencyKey: string;
  logger: PluginLogger;
  /** The tools and the journal of a kind that `usesTools`. */
  agentLoop?: AgentLoopPorts;
}

/** A problem with a config, `path` dotted from the config's root (e.g. `expression`). */
export interface ConfigProblem {
  path: string;
  message: string;
}

export interface Capability {
  execute(request: ExecuteRequest): Promise<unknown>;
  /** Checks beyond the configSchema (an expression that must compile), run before a config is stored. */
  checkConfig?(config: Record<string, unknown>): ConfigProblem[];
}

/**
 * A plugin whose actions come from connections an organization makes (an MCP server each)
 * rather than from the build. Each connection is an installation `<slug>.<connection>` whose
 * stored config says what it offers; its actions are `<slug>.<connection>.<action>`.
 */
export interface PluginConnections {
  /** Where an admin makes a connection (the catalog shows it), e.g. `POST /api/mcp-servers`. */
  endpoint: string;
  /** The actions one connection offers, from its stored config. */
  actions(config: Record<string, unknown>): CapabilityManifest[];
  /** What a caller still gives an action once its config (`with`) is set: the connection's config fixes some arguments. */
  remainingInput(inputSchema: JsonSchema, config: Record<string, unknown>): JsonSchema;
  /** The capability that calls `action` of whichever connection its `pluginConfig` is. */
  action(name: string): Capability;
  /**
   * Reads what the connection `config` (as an admin entered it) offers now, and answers the
   * config to store: the entered fields with the offering. Throws an ExecutionError when the
   * remote side cannot be read.
   */
  read(config: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>>;
}

export interface Plugin {
  manifest: PluginManifest;
  agentKinds: Record<string, Capability>;
  actions: Record<string, Capability>;
  connections?: PluginConnections;
}

/** Plugins whose actions come from connections: `mcp.<server>.<tool>`. */
const CONNECTION_PLUGINS: ReadonlySet<string> = new Set(['mcp']);

/**
 * The installation an agent kind or action belongs to: `http` for `http.request`, the
 * connection `mcp.github` for `mcp.github.search_issues`.
 */
export function installationSlug(qualified: string): string {
  const [slug, connection] = qualified.split('.', 2);
  return CONNECTION_PLUGINS.has(slug) && connection ? `${slug}.${connection}` : slug;
}

/** `<slug>.<connection>` of a plugin that makes connections, split; null for any other slug. */
export function connectionOf(slug: string): { plugin: string; connection: string } | null {
  const dot = slug.indexOf('.');
  if (dot < 0 || !CONNECTION_PLUGINS.has(slug.slice(0, dot))) return null;
  return { plugin: slug.slice(0, dot), connection: slug.slice(dot + 1) };
}

/** Codes a failed execution carries in `error.code`. */
export type ExecutionErrorCode =
  | 'AGENT_TIMEOUT'
  | 'CANCELED'
  | 'UPSTREAM_ERROR'
  | 'INVALID_OUTPUT'
  | 'INVALID_INPUT'
  | 'EXPRESSION_FAILED'
  | 'EXPRESSION_TIMEOUT'
  | 'OUTBOUND_REFUSED'
  | 'AGENT_TURN_LIMIT'
  | 'AGENT_TOKEN_LIMIT'
  | 'TOOL_ERROR';

/** How a capability reports failure: a stable code and a message safe to show the user. */
export class ExecutionError extends Error {
  constructor(
    readonly code: ExecutionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExecutionError';
  }
}
