import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject } from 'class-validator';
import { CapabilityManifest, Plugin } from '../domain/plugin';
import { Installation } from '../domain/installation';
import { PluginsService } from '../application/plugins.service';
import { Optional } from '../../../shared/http/optional.decorator';

export class InstallPluginRequest {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "The plugin's configuration; see its configSchema in /api/plugin-catalog",
  })
  @Optional()
  @IsObject()
  config?: Record<string, unknown>;
}

export class UpdatePluginRequest {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Fields to change; null removes a field; a secret sent back as "********" keeps its value',
  })
  @IsObject()
  config!: Record<string, unknown>;
}

export class CapabilityResponse {
  @ApiProperty({ example: 'http.agent' }) kind!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) configSchema!: object;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) inputSchema?: object;
}

export class PluginManifestResponse {
  @ApiProperty({ example: 'http' }) slug!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ example: '1.0.0' }) version!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) configSchema!: object;
  @ApiProperty({ type: [String], description: 'Config fields stored encrypted and never returned' }) secretFields!: string[];
  @ApiProperty({ type: [CapabilityResponse] }) agentKinds!: CapabilityResponse[];
  @ApiProperty({ type: [CapabilityResponse] }) actions!: CapabilityResponse[];

  static from(plugin: Plugin): PluginManifestResponse {
    const m = plugin.manifest;
    const capability = (c: CapabilityManifest): CapabilityResponse => ({
      kind: `${m.slug}.${c.name}`,
      description: c.description,
      configSchema: c.configSchema,
      ...(c.inputSchema ? { inputSchema: c.inputSchema } : {}),
    });
    return {
      slug: m.slug,
      name: m.name,
      version: m.version,
      description: m.description,
      configSchema: m.configSchema,
      secretFields: m.secretFields,
      agentKinds: m.agentKinds.map(capability),
      actions: m.actions.map(capability),
    };
  }
}

export class CatalogEntryResponse extends PluginManifestResponse {
  @ApiProperty({ description: "Whether the caller's organization has installed it" }) installed!: boolean;
}

export class CatalogResponse {
  @ApiProperty({ type: [CatalogEntryResponse] }) data!: CatalogEntryResponse[];
}

export class InstalledPluginResponse extends PluginManifestResponse {
  @ApiProperty({ format: 'uuid' }) installationId!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Secret fields shown as "********"' }) config!: Record<
    string,
    unknown
  >;
  @ApiProperty({ format: 'date-time' }) installedAt!: string;
  @ApiProperty({ format: 'uuid' }) installedBy!: string;
  @ApiProperty({ format: 'date-time' }) updatedAt!: string;

  static of(installation: Installation, plugin: Plugin): InstalledPluginResponse {
    return {
      ...PluginManifestResponse.from(plugin),
      version: installation.version,
      installationId: installation.id,
      config: PluginsService.redact(plugin, installation.config),
      installedAt: installation.createdAt.toISOString(),
      installedBy: installation.installedBy,
      updatedAt: installation.updatedAt.toISOString(),
    };
  }
}

export class InstalledPluginPageResponse {
  @ApiProperty({ type: [InstalledPluginResponse] }) data!: InstalledPluginResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
