import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { McpServersService } from '../application/mcp-servers.service';
import { CreateMcpServerRequest, McpServerPageResponse, McpServerResponse, UpdateMcpServerRequest } from './mcp-server.dto';

@ApiTags('mcp-servers')
@ApiBearerAuth()
@Controller('api/mcp-servers')
export class McpServersController {
  constructor(private readonly servers: McpServersService) {}

  @Post()
  @RequiresScope('plugins:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Connect a remote MCP server: its tools are read now and become actions mcp.<name>.<tool>' })
  @ApiCreatedResponse({ type: McpServerResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'MCP_SERVER_NAME_TAKEN', 'MCP_SERVER_LIMIT_REACHED', 'MCP_SERVER_UNREACHABLE')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: CreateMcpServerRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<McpServerResponse> {
    const { name, ...input } = body;
    const server = await this.servers.create(caller, name, input);
    res.location(`/api/mcp-servers/${server.id}`);
    return McpServerResponse.of(server);
  }

  @Get()
  @RequiresScope('plugins:read')
  @AnyRole()
  @ApiOperation({ summary: "MCP servers connected to the caller's organization, newest first" })
  @ApiOkResponse({ type: McpServerPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<McpServerPageResponse> {
    const page = await this.servers.list(caller, query);
    return { data: page.data.map((s) => McpServerResponse.of(s)), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @RequiresScope('plugins:read')
  @AnyRole()
  @ApiOperation({ summary: 'One MCP server with its tools (header values never shown)' })
  @ApiOkResponse({ type: McpServerResponse })
  @ApiErrors('VALIDATION_FAILED', 'MCP_SERVER_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<McpServerResponse> {
    return McpServerResponse.of(await this.servers.get(caller.organizationId, id));
  }

  @Patch(':id')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @ApiOperation({ summary: "Change a server's URL, headers or allowed tools; its tools are read again" })
  @ApiOkResponse({ type: McpServerResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'MCP_SERVER_NOT_FOUND', 'MCP_SERVER_UNREACHABLE')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: UpdateMcpServerRequest,
  ): Promise<McpServerResponse> {
    return McpServerResponse.of(await this.servers.update(caller, id, body));
  }

  @Post(':id/refresh')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({ summary: "Read the server's tools again (tools/list) and store them" })
  @ApiOkResponse({ type: McpServerResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'MCP_SERVER_NOT_FOUND', 'MCP_SERVER_UNREACHABLE')
  async refresh(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<McpServerResponse> {
    return McpServerResponse.of(await this.servers.refresh(caller, id));
  }

  @Delete(':id')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Disconnect a server; refused while a workflow or agent uses one of its tools' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'MCP_SERVER_NOT_FOUND', 'PLUGIN_IN_USE')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.servers.delete(caller, id);
  }
}
