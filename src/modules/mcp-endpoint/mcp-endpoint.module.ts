import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { RunsModule } from '../runs/runs.module';
import { WorkflowsModule } from '../workflows/workflows.module';
import { McpController } from './api/mcp.controller';
import { ProtectedResourceController } from './api/protected-resource.controller';
import { McpToolsService } from './application/mcp-tools.service';

/** The platform as an MCP server: `/api/mcp` and its protected resource metadata. */
@Module({
  imports: [WorkflowsModule, AgentsModule, RunsModule],
  controllers: [McpController, ProtectedResourceController],
  providers: [McpToolsService],
})
export class McpEndpointModule {}
