import { Controller, Delete, Get, HttpCode, Logger, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresAnyScope } from '../../../shared/auth/access.decorators';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { McpToolsService } from '../application/mcp-tools.service';
import { McpChallengeFilter } from './mcp-challenge.filter';
import { mcpServerFor } from './mcp-protocol';

/**
 * A body that is not a JSON-RPC 2.0 message is refused here, in the service's envelope; what is
 * one gets MCP's own answers, errors included, from the SDK. (A batch is refused before, by
 * `refusesBatch`.)
 */
function assertJsonRpc(body: unknown): void {
  const isMessage =
    typeof body === 'object' &&
    body !== null &&
    (body as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
    (typeof (body as { method?: unknown }).method === 'string' || 'result' in body || 'error' in body);
  if (isMessage) return;
  throw new DomainError('VALIDATION_FAILED', 'The body must be a JSON-RPC 2.0 message of MCP', [
    { path: 'body', message: 'body must have jsonrpc "2.0" and a method (or a result or error)' },
  ]);
}

/**
 * MCP has had no JSON-RPC batches since its protocol version 2025-06-18. One POST is one
 * message, so that one request is one call against the rate limit: a batch is answered 400
 * with the JSON-RPC error for an invalid request (what the SDK answers a body it cannot read,
 * so an MCP client reads it as one), and none of its messages is handled.
 */
function refusesBatch(body: unknown, res: Response): boolean {
  if (!Array.isArray(body)) return false;
  res.status(400).json({
    jsonrpc: '2.0',
    id: null,
    error: {
      code: ErrorCode.InvalidRequest,
      message: 'Invalid Request: JSON-RPC batches are not part of MCP; send one JSON-RPC message per request',
    },
  });
  return true;
}

/** Whether the message asks for progress notifications (`params._meta.progressToken`). */
function asksForProgress(body: unknown): boolean {
  return (body as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken !== undefined;
}

function onlyPost(): never {
  throw new DomainError(
    'METHOD_NOT_ALLOWED',
    'This MCP endpoint is stateless: POST JSON-RPC messages to it; it opens no stream and keeps no session',
    undefined,
    {
      Allow: 'POST',
    },
  );
}

/**
 * The platform as an MCP server: the organization's exposed workflows and agents as tools,
 * over MCP's Streamable HTTP transport in stateless mode (a fresh SDK server and transport per
 * POST; answers are JSON or, while a call sends progress, an SSE stream). Authenticated and
 * rate limited like every route; the scopes narrow what a key sees and calls.
 */
@ApiTags('mcp')
@ApiBearerAuth()
@Controller('api/mcp')
@UseFilters(McpChallengeFilter)
export class McpController {
  private readonly logger = new Logger('Mcp');

  constructor(private readonly tools: McpToolsService) {}

  @Post()
  @RequiresAnyScope('workflows:read', 'workflows:run', 'agents:read', 'agents:execute')
  @AnyRole()
  @HttpCode(200)
  @ApiOperation({
    summary:
      'MCP (Streamable HTTP, stateless): JSON-RPC `initialize`, `tools/list`, `tools/call` over the exposed workflows and agents. ' +
      'tools/list shows workflows with `workflows:read` and agents with `agents:read`; tools/call needs `workflows:run` or ' +
      '`agents:execute` (without it: a tool result with isError). 401 carries `WWW-Authenticate: Bearer resource_metadata=...`. ' +
      'One message per POST: a JSON-RPC batch (an array) is answered 400 with the JSON-RPC error -32600 and none of it is handled',
  })
  @ApiBody({ schema: { type: 'object', description: 'One JSON-RPC 2.0 message of MCP (a batch is refused)', additionalProperties: true } })
  @ApiOkResponse({
    description: 'A JSON-RPC response (application/json), or an SSE stream of them (text/event-stream)',
    content: {
      'application/json': { schema: { type: 'object', description: 'One JSON-RPC 2.0 response', additionalProperties: true } },
      'text/event-stream': { schema: { type: 'string', description: 'Server-sent events, each a JSON-RPC 2.0 message' } },
    },
  })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMIT_EXCEEDED')
  async handle(@CurrentPrincipal() caller: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
    if (refusesBatch(req.body, res)) return;
    assertJsonRpc(req.body);
    const requestId = (req as Request & { id?: string }).id ?? 'unknown';
    const server = mcpServerFor(caller, this.tools, requestId, this.logger);
    // The answer is an event stream only where something goes out before it: progress a call
    // asked for, to a client that takes streams. Everything else is plain JSON (cheaper on both
    // sides; and curl or a plain HTTP client need nothing more). The SDK's transport is told the
    // client accepts both.
    const streams = (req.headers.accept ?? '').includes('text/event-stream') && asksForProgress(req.body);
    req.headers.accept = 'application/json, text/event-stream';
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streams });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }

  @Get()
  @RequiresAnyScope('workflows:read', 'workflows:run', 'agents:read', 'agents:execute')
  @AnyRole()
  @ApiOperation({ summary: 'Not served (405, `Allow: POST`): a stateless MCP server opens no server-to-client stream' })
  @ApiErrors('METHOD_NOT_ALLOWED', 'UNAUTHORIZED')
  stream(): never {
    onlyPost();
  }

  @Delete()
  @RequiresAnyScope('workflows:read', 'workflows:run', 'agents:read', 'agents:execute')
  @AnyRole()
  @ApiOperation({ summary: 'Not served (405, `Allow: POST`): a stateless MCP server has no session to end' })
  @ApiErrors('METHOD_NOT_ALLOWED', 'UNAUTHORIZED')
  endSession(): never {
    onlyPost();
  }
}
