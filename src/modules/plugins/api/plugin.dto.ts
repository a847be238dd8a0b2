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

function capabilityResponse(slug: string, c: CapabilityManifest): CapabilityResponse {
  return {
    kind: `${slug}.${c.name}`,
    description: c.description,
    configSchema: c.configSchema,
    ...(c.inputSchema ? { inputSchema: c.inputSchema } : {}),
  };
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
    const capability = (c: CapabilityManifest) => capabilityResponse(m.slug, c);
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

  /** A connection (`mcp.<server>`) shows as a plugin of its own: its slug, its actions, the fields an admin entered. */
  static of(installation: Installation, plugin: Plugin): InstalledPluginResponse {
    const manifest = PluginManifestResponse.from(plugin);
    const connected = plugin.connections
      ? {
          slug: installation.slug,
          name: `${plugin.manifest.name}: ${installation.slug.slice(plugin.manifest.slug.length + 1)}`,
          actions: plugin.connections.actions(installation.config).map((c) => capabilityResponse(installation.slug, c)),
        }
      : {};
    const config = plugin.connections
      ? Object.fromEntries(
          Object.entries(installation.config).filter(([key]) => key in (plugin.manifest.configSchema.properties as object)),
        )
      : installation.config;
    return {
      ...manifest,
      ...connected,
      version: installation.version,
      installationId: installation.id,
      config: PluginsService.redact(plugin, config),
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
