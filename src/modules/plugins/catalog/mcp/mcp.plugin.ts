import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tenantSchemaProblems, tenantValueProblems } from '../../../../shared/json-schema/json-schema.validator';
import { Capability, CapabilityManifest, ExecutionError, JsonSchema, Plugin } from '../../domain/plugin';
import { HttpClient, MAX_RESPONSE_BYTES } from '../http-client';
import { MCP_TRANSPORTS, McpClients, McpTransport } from './mcp-clients';

/** A tool as read from the server's tools/list and stored with the connection. */
export interface StoredTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** The stored config of one connected MCP server (an installation `mcp.<name>`). */
export interface McpConnectionConfig {
  url: string;
  /** `streamable-http` when absent. */
  transport?: McpTransport;
  /** Secret: sealed at rest, never returned. */
  headers?: Record<string, string>;
  /** Only these of the server's tools are offered; all of them when absent. */
  allowedTools?: string[];
  tools: StoredTool[];
  /** Tools the server lists that cannot be offered, and why (a name or schema we cannot use). */
  skippedTools: Array<{ name: string; reason: string }>;
  refreshedAt: string;
}

/** Largest text of a tool's result kept in its output (the content is kept whole). */
const MAX_TEXT = 64 * 1024;

export const MCP_SERVERS_ENDPOINT = 'POST /api/mcp-servers';

/**
 * `mcp`: the tools of remote MCP servers an organization connects (`POST /api/mcp-servers`)
 * become actions `mcp.<server>.<tool>`, for workflow steps and `llm.agent` tools. A step's
 * `with` gives fixed arguments and its input the rest (`with` wins); the arguments are checked
 * against the tool's stored input schema before the call. Calls use the official SDK's client
 * over the outbound client (SSRF guard on every connection and redirect).
 */
export function createMcpPlugin(http: HttpClient): Plugin {
  const clients = new McpClients(http, MAX_RESPONSE_BYTES);
  return {
    manifest: {
      slug: 'mcp',
      name: 'MCP servers',
      version: '1.0.0',
      description:
        'Tools of remote MCP servers (Streamable HTTP). Not installed from the catalog: an admin connects each server with ' +
        `${MCP_SERVERS_ENDPOINT} { "name", "url", "headers"?, "allowedTools"? }; its tools become actions mcp.<server>.<tool>, ` +
        'usable as workflow steps and as llm.agent tools. Connected servers are listed with the installed plugins as mcp.<server>.',
      configSchema: {
        type: 'object',
        required: ['url'],
        properties: {
          url: { type: 'string', format: 'uri', maxLength: 2048, description: "The server's MCP endpoint." },
          transport: {
            type: 'string',
            enum: [...MCP_TRANSPORTS],
            default: 'streamable-http',
            description: 'Streamable HTTP, or the older HTTP+SSE transport (the URL of its event stream).',
          },
          headers: {
            type: 'object',
            maxProperties: 20,
            propertyNames: { pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" },
            additionalProperties: { type: 'string', maxLength: 8192 },
            writeOnly: true,
            description: 'Sent with every request (e.g. Authorization); stored sealed, never returned.',
          },
          allowedTools: { type: 'array', maxItems: 200, items: { type: 'string' }, description: 'Only these tools are offered.' },
        },
      },
      secretFields: ['headers'],
      secretDestinationFields: ['url'],
      agentKinds: [],
      actions: [],
    },
    agentKinds: {},
    actions: {},
    connections: {
      endpoint: MCP_SERVERS_ENDPOINT,
      actions: (config) => ((config as unknown as McpConnectionConfig).tools ?? []).map(toolManifest),
      remainingInput: withoutFixed,
      action: (name) => toolCapability(clients, name),
      read: (config, timeoutMs) => readConnection(clients, config as unknown as McpConnectionConfig, timeoutMs),
    },
  };
}

/** The most a server's stored tools (names, descriptions, schemas) take, serialized. */
const MAX_TOOLS_BYTES = 1024 * 1024;

/** MCP's tool names: what a qualified action `mcp.<server>.<tool>` can carry. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The server's tools now, each kept when its name and input schema can be used (the schema
 * passes the same checks as a tenant's: size, linear-time patterns), else listed as skipped.
 */
async function readConnection(clients: McpClients, config: McpConnectionConfig, timeoutMs: number): Promise<Record<string, unknown>> {
  const listed = await clients.listTools(config, timeoutMs);
  const allowed = config.allowedTools ? new Set(config.allowedTools) : null;
  const tools: StoredTool[] = [];
  const skippedTools: Array<{ name: string; reason: string }> = [];
  let bytes = 0;
  for (const tool of listed) {
    if (allowed && !allowed.has(tool.name)) continue;
    const stored = { name: tool.name, description: (tool.description ?? tool.title ?? '').slice(0, 4000), inputSchema: tool.inputSchema };
    const size = Buffer.byteLength(JSON.stringify(stored));
    const reason = !TOOL_NAME.test(tool.name)
      ? 'its name is not 1-128 letters, digits, `_`, `-` or `.`'
      : bytes + size > MAX_TOOLS_BYTES
        ? `the server's tools take more than ${MAX_TOOLS_BYTES} bytes; list fewer with allowedTools`
        : tenantSchemaProblems(tool.inputSchema, 'inputSchema')[0]?.message;
    if (reason) skippedTools.push({ name: tool.name.slice(0, 128), reason });
    else {
      tools.push(stored);
      bytes += size;
    }
  }
  for (const name of config.allowedTools ?? [])
    if (!listed.some((t) => t.name === name)) skippedTools.push({ name, reason: 'the server does not list it' });
  return { ...config, tools, skippedTools, refreshedAt: new Date().toISOString() };
}

function toolManifest(tool: StoredTool): CapabilityManifest {
  return { name: tool.name, description: tool.description, configSchema: fixedArguments(tool.inputSchema), inputSchema: tool.inputSchema };
}

/** `with` holds some of the arguments: the tool's schema without `required` (the input gives the rest). */
function fixedArguments(schema: JsonSchema): JsonSchema {
  const { required: _required, ...rest } = schema;
  return rest;
}

/** The arguments left once `fixed` are set by `with`: neither listed nor required. */
function withoutFixed(schema: JsonSchema, fixed: Record<string, unknown>): JsonSchema {
  const names = Object.keys(fixed);
  if (!names.length) return schema;
  const properties = Object.fromEntries(
    Object.entries((schema.properties as JsonSchema | undefined) ?? {}).filter(([k]) => !names.includes(k)),
  );
  const required = Array.isArray(schema.required) ? (schema.required as string[]).filter((k) => !names.includes(k)) : undefined;
  return { ...schema, properties, ...(required ? { required } : {}) };
}

function toolCapability(clients: McpClients, name: string): Capability {
  return {
    async execute({ organizationId, pluginConfig, config, input, signal, timeoutMs }) {
      const connection = pluginConfig as unknown as McpConnectionConfig;
      const tool = connection.tools.find((t) => t.name === name);
      if (!tool) throw new ExecutionError('TOOL_ERROR', `The MCP server offers no tool '${name}' (refresh it if the server changed)`);
      const args = { ...(isObject(input) ? input : {}), ...config };
      const problems = tenantValueProblems(tool.inputSchema, args, 'arguments');
      if (problems.length)
        throw new ExecutionError(
          'INVALID_INPUT',
          `The arguments do not fit the tool's input schema: ${problems.map((p) => p.message).join('; ')}`,
        );
      const result = await clients.callTool(organizationId, connection, name, args, signal, timeoutMs);
      const text = textOf(result);
      if (result.isError) throw new ExecutionError('TOOL_ERROR', `Tool '${name}' failed: ${text.slice(0, 1000) || 'no message'}`);
      return { content: result.content, structuredContent: result.structuredContent ?? null, text };
    },
  };
}

/** The text items of a result, joined by newlines, cut at MAX_TEXT. */
function textOf(result: CallToolResult): string {
  const text = (result.content ?? []).flatMap((item) => (item.type === 'text' ? [item.text] : [])).join('\n');
  return text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
