import { ErrorDetail } from '../errors/domain-error';
import { schemaProblems } from '../json-schema/json-schema.validator';

/**
 * `"mcp": { "expose": true, "description"?: "..." }` on a workflow's definition or an agent:
 * whether `/api/mcp` serves it as a tool to MCP clients (off when absent), and the description
 * the clients see (the workflow's or agent's own when absent).
 */
export interface McpExposure {
  expose: boolean;
  description?: string;
}

/** The JSON Schema of the `mcp` field, as definitions and agents check it at save. */
export const MCP_EXPOSURE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['expose'],
  properties: {
    expose: { type: 'boolean' },
    description: { type: 'string', minLength: 1, maxLength: 2000 },
  },
} as const;

/** Why `value` is not an `mcp` field, with paths under `path` (none: it is one). */
export function mcpExposureProblems(value: unknown, path: string): ErrorDetail[] {
  return schemaProblems(MCP_EXPOSURE_SCHEMA, value, path);
}

/** Whether something with this `mcp` field is served as a tool. */
export function isExposed(mcp: McpExposure | null | undefined): boolean {
  return mcp?.expose === true;
}
