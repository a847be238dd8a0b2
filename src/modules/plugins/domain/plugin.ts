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

export interface Plugin {
  manifest: PluginManifest;
  agentKinds: Record<string, Capability>;
  actions: Record<string, Capability>;
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
  | 'AGENT_TOKEN_LIMIT';

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
