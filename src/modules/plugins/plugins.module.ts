import { Module } from '@nestjs/common';
import { PluginsController } from './api/plugins.controller';
import { PluginRegistry } from './application/plugin-registry';
import { PluginsService } from './application/plugins.service';
import { InstallationRepository } from './domain/installation.repository';
import { TypeOrmInstallationRepository } from './infrastructure/typeorm-installation.repository';

@Module({
  controllers: [PluginsController],
  providers: [PluginRegistry, PluginsService, { provide: InstallationRepository, useClass: TypeOrmInstallationRepository }],
  exports: [PluginRegistry, PluginsService],
})
export class PluginsModule {}
