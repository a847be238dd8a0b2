import { Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { Principal } from '../../../shared/auth/principal';
import { McpToolsService, ToolOutcome } from '../application/mcp-tools.service';
import { McpTool } from '../domain/mcp-tool';

export const SERVER_INFO = { name: 'platform', title: 'The Platform', version: '0.1.0' };

const INSTRUCTIONS =
  "The organization's workflows and agents marked for MCP, as tools. A call waits a while for its run or execution; " +
  'one still going then answers its id and status (not an error), to be read later through the REST API.';

function toolOf(tool: McpTool): Tool {
  return {
    name: tool.name,
    title: tool.target.name,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    _meta: { [`${tool.target.kind}Id`]: tool.target.id },
  };
}

function resultOf(outcome: ToolOutcome): CallToolResult {
  return {
    content: [{ type: 'text', text: outcome.text }],
    ...(outcome.structured ? { structuredContent: outcome.structured } : {}),
    ...(outcome.isError ? { isError: true } : {}),
    ...(outcome.meta ? { _meta: outcome.meta } : {}),
  };
}

/**
 * An MCP server (the SDK's low-level `Server`) for one HTTP request of one caller: tools/list
 * and tools/call over the caller's organization's exposed tools. Stateless: one per request,
 * so nothing of a caller outlives its request. An unknown tool is the JSON-RPC error MCP names
 * (-32602); anything unforeseen is logged with the request id and answered without its detail.
 */
export function mcpServerFor(caller: Principal, tools: McpToolsService, requestId: string, logger: Logger): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
  const guarded = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof McpError) throw error;
      logger.error({ requestId, err: error }, `MCP ${what} failed`);
      throw new McpError(ErrorCode.InternalError, `An unexpected error occurred (request id ${requestId})`);
    }
  };

  server.setRequestHandler(ListToolsRequestSchema, () =>
    guarded('tools/list', async () => ({ tools: (await tools.list(caller)).map(toolOf) })),
  );

  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    guarded('tools/call', async () => {
      const tool = await tools.find(caller, request.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      const token = request.params._meta?.progressToken;
      const progress =
        token === undefined
          ? undefined
          : (p: { progress: number; total?: number; message: string }) =>
              extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, ...p } });
      return resultOf(await tools.call(caller, tool, request.params.arguments ?? {}, progress));
    }),
  );
  return server;
}
