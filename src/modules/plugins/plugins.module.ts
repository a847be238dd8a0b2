import { Module } from '@nestjs/common';
import { McpServersController } from './api/mcp-servers.controller';
import { PluginsController } from './api/plugins.controller';
import { CapabilityRunner } from './application/capability-runner';
import { McpServersService } from './application/mcp-servers.service';
import { PluginRegistry } from './application/plugin-registry';
import { PluginsService } from './application/plugins.service';
import { InstallationRepository, PluginUsage } from './domain/installation.repository';
import { TypeOrmInstallationRepository } from './infrastructure/typeorm-installation.repository';

@Module({
  controllers: [PluginsController, McpServersController],
  providers: [
    PluginRegistry,
    PluginsService,
    McpServersService,
    PluginUsage,
    CapabilityRunner,
    { provide: InstallationRepository, useClass: TypeOrmInstallationRepository },
  ],
  exports: [PluginRegistry, PluginsService, PluginUsage, CapabilityRunner],
})
export class PluginsModule {}
