import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { PluginRegistry } from '../application/plugin-registry';
import { PluginsService } from '../application/plugins.service';
import { PluginSlug } from './plugin-slug.pipe';
import {
  CatalogResponse,
  InstalledPluginPageResponse,
  InstalledPluginResponse,
  InstallPluginRequest,
  UpdatePluginRequest,
  PluginManifestResponse,
} from './plugin.dto';

@ApiTags('plugins')
@ApiBearerAuth()
@Controller('api')
export class PluginsController {
  constructor(
    private readonly plugins: PluginsService,
    private readonly registry: PluginRegistry,
  ) {}

  @Get('plugins')
  @RequiresScope('plugins:read')
  @AnyRole()
  @ApiOperation({ summary: "Plugins installed for the caller's organization" })
  @ApiOkResponse({ type: InstalledPluginPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<InstalledPluginPageResponse> {
    const page = await this.plugins.list(caller, query);
    return {
      data: page.data.flatMap((i) => {
        const plugin = this.registry.find(i.slug);
        return plugin ? [InstalledPluginResponse.of(i, plugin)] : [];
      }),
      nextCursor: page.nextCursor,
    };
  }

  @Get('plugin-catalog')
  @RequiresScope('plugins:read')
  @AnyRole()
  @ApiOperation({ summary: 'Every plugin this installation ships, with whether it is installed' })
  @ApiOkResponse({ type: CatalogResponse })
  @ApiErrors()
  async catalog(@CurrentPrincipal() caller: Principal): Promise<CatalogResponse> {
    const entries = await this.plugins.catalog(caller);
    return { data: entries.map(({ plugin, installed }) => ({ ...PluginManifestResponse.from(plugin), installed })) };
  }

  @Get('plugins/:slug')
  @RequiresScope('plugins:read')
  @AnyRole()
  @ApiOperation({ summary: 'One installed plugin: what it provides and its config (secrets redacted)' })
  @ApiOkResponse({ type: InstalledPluginResponse })
  @ApiErrors('VALIDATION_FAILED', 'PLUGIN_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('slug', PluginSlug) slug: string): Promise<InstalledPluginResponse> {
    const { installation, plugin } = await this.plugins.get(caller.organizationId, slug);
    return InstalledPluginResponse.of(installation, plugin);
  }

  @Post('plugins/:slug/install')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Install a plugin: 201 when installed now, 200 when already installed with the same config' })
  @ApiCreatedResponse({ type: InstalledPluginResponse })
  @ApiOkResponse({ type: InstalledPluginResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'PLUGIN_NOT_IN_CATALOG', 'PLUGIN_ALREADY_INSTALLED')
  async install(
    @CurrentPrincipal() caller: Principal,
    @Param('slug', PluginSlug) slug: string,
    @Body() body: InstallPluginRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<InstalledPluginResponse> {
    const { installation, plugin, created } = await this.plugins.install(caller, slug, body.config ?? {});
    res.status(created ? 201 : 200).location(`/api/plugins/${slug}`);
    return InstalledPluginResponse.of(installation, plugin);
  }

  @Patch('plugins/:slug')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @ApiOperation({ summary: "Change an installed plugin's config" })
  @ApiOkResponse({ type: InstalledPluginResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'PLUGIN_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('slug', PluginSlug) slug: string,
    @Body() body: UpdatePluginRequest,
  ): Promise<InstalledPluginResponse> {
    const { installation, plugin } = await this.plugins.reconfigure(caller, slug, body.config);
    return InstalledPluginResponse.of(installation, plugin);
  }

  @Delete('plugins/:slug')
  @RequiresScope('plugins:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Uninstall; refused while agents or workflows use the plugin' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'PLUGIN_NOT_FOUND', 'PLUGIN_IN_USE')
  async uninstall(@CurrentPrincipal() caller: Principal, @Param('slug', PluginSlug) slug: string): Promise<void> {
    await this.plugins.uninstall(caller, slug);
  }
}
