import { randomUUID } from 'node:crypto';
import type { McpExposure } from '../../../shared/mcp/mcp-exposure';

export type JsonObject = Record<string, unknown>;

export interface AgentProps {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  /** `<plugin>.<kind>`, e.g. `transform.jsonata`. */
  kind: string;
  config: JsonObject;
  inputSchema: JsonObject | null;
  /** Served as a tool by `/api/mcp` when `expose` is true; null: not served. */
  mcp: McpExposure | null;
  timeoutMs: number;
  maxAttempts: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export type AgentChanges = Partial<
  Pick<AgentProps, 'name' | 'description' | 'config' | 'inputSchema' | 'mcp' | 'timeoutMs' | 'maxAttempts'>
>;

export const AGENT_LIMITS = {
  timeoutMs: { min: 100, max: 600_000, default: 30_000 },
  maxAttempts: { min: 1, max: 10, default: 3 },
} as const;

/** A registered agent: a plugin's agent kind with its config, run through executions. */
export class Agent {
  private constructor(private props: AgentProps) {}

  static create(input: Omit<AgentProps, 'id' | 'createdAt' | 'updatedAt'>): Agent {
    const now = new Date();
    return new Agent({ ...input, id: randomUUID(), createdAt: now, updatedAt: now });
  }

  static rehydrate(props: AgentProps): Agent {
    return new Agent({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get name() {
    return this.props.name;
  }
  get kind() {
    return this.props.kind;
  }
  get pluginSlug(): string {
    return this.props.kind.split('.', 1)[0];
  }
  get config() {
    return this.props.config;
  }
  get inputSchema() {
    return this.props.inputSchema;
  }
  get mcp() {
    return this.props.mcp;
  }
  get timeoutMs() {
    return this.props.timeoutMs;
  }
  get maxAttempts() {
    return this.props.maxAttempts;
  }

  change(changes: AgentChanges): void {
    const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    this.props = { ...this.props, ...defined, updatedAt: new Date() };
  }

  toProps(): AgentProps {
    return { ...this.props };
  }
}
