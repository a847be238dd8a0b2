import { AuditAction, AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { EventOutbox } from '../../../shared/events/event-outbox';
import { assertSchema } from '../../../shared/json-schema/json-schema.validator';
import { canonicalJson } from '../../../shared/json/canonical-json';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Installation } from '../domain/installation';
import { InstallationRepository, PluginUsage } from '../domain/installation.repository';
import { Plugin } from '../domain/plugin';
import { PluginRegistry } from './plugin-registry';

export const REDACTED = '********';

export function pluginNotFound(slug: string): DomainError {
  return new DomainError('PLUGIN_NOT_FOUND', `Plugin '${slug}' is not installed`);
}

@Injectable()
export class PluginsService {
  constructor(
    private readonly registry: PluginRegistry,
    private readonly installations: InstallationRepository,
    private readonly usage: PluginUsage,
    private readonly events: EventOutbox,
    private readonly audit: AuditTrail,
  ) {}

  list(caller: Principal, page: PageRequest): Promise<Page<Installation>> {
    return this.installations.list(caller.organizationId, page);
  }

  installedSlugs(organizationId: string): Promise<string[]> {
    return this.installations.installedSlugs(organizationId);
  }

  async catalog(caller: Principal): Promise<Array<{ plugin: Plugin; installed: boolean }>> {
    // A plugin that makes connections counts as installed once one is made.
    const installed = new Set((await this.installations.installedSlugs(caller.organizationId)).map((s) => s.split('.', 1)[0]));
    return this.registry.all().map((plugin) => ({ plugin, installed: installed.has(plugin.manifest.slug) }));
  }

  /** The installation, or null when this organization has not installed it. */
  find(organizationId: string, slug: string): Promise<Installation | null> {
    return this.installations.find(organizationId, slug);
  }

  /** The installation with its plugin; PLUGIN_NOT_FOUND when this organization has not installed it. */
  async get(organizationId: string, slug: string): Promise<{ installation: Installation; plugin: Plugin }> {
    const installation = await this.installations.find(organizationId, slug);
    const plugin = this.registry.find(slug);
    if (!installation || !plugin) throw pluginNotFound(slug);
    return { installation, plugin };
  }

  /** Idempotent: the same config again answers the existing installation (`created: false`). */
  @Transactional()
  async install(
    caller: Principal,
    slug: string,
    config: Record<string, unknown>,
  ): Promise<{ installation: Installation; plugin: Plugin; created: boolean }> {
    const plugin = this.registry.find(slug);
    if (!plugin) throw new DomainError('PLUGIN_NOT_IN_CATALOG', `Plugin '${slug}' is not in the catalog`);
    assertNotConnections(plugin);
    assertSchema(plugin.manifest.configSchema, config, 'config', `The config of plugin '${slug}'`);
    const installation = Installation.create({
      organizationId: caller.organizationId,
      slug,
      version: plugin.manifest.version,
      config,
      installedBy: caller.userId,
    });
    if (await this.installations.insert(installation, plugin.manifest.secretFields)) {
      await this.events.publish([
        { organizationId: caller.organizationId, type: 'plugin.installed', data: { slug, version: plugin.manifest.version } },
      ]);
      await this.audit.record({
        ...audited(installation, 'plugin.installed'),
        changes: { after: { version: plugin.manifest.version, config: PluginsService.redact(plugin, config) } },
      });
      return { installation, plugin, created: true };
    }
    const existing = await this.installations.find(caller.organizationId, slug);
    // Secrets are left out of the comparison (and stay as stored): whether a guessed secret is
    // the stored one must not show in the answer. PATCH changes them.
    if (existing?.hasConfig(config, plugin.manifest.secretFields)) return { installation: existing, plugin, created: false };
    throw new DomainError(
      'PLUGIN_ALREADY_INSTALLED',
      `Plugin '${slug}' is already installed with a different config; change it with PATCH /api/plugins/${slug}`,
    );
  }

  /** Top-level merge: given keys replace, `null` removes; the result must pass the schema. */
  @Transactional()
  async reconfigure(
    caller: Principal,
    slug: string,
    patch: Record<string, unknown>,
  ): Promise<{ installation: Installation; plugin: Plugin }> {
    const { installation, plugin } = await this.get(caller.organizationId, slug);
    assertNotConnections(plugin);
    // A secret sent back as shown ("********") keeps its stored value.
    const kept = Object.fromEntries(
      Object.entries(patch).filter(([k, v]) => !(v === REDACTED && plugin.manifest.secretFields.includes(k))),
    );
    const merged = Object.fromEntries(Object.entries({ ...installation.config, ...kept }).filter(([, v]) => v !== null));
    assertSecretsFollow(plugin, installation.config, merged, kept);
    assertSchema(plugin.manifest.configSchema, merged, 'config', `The config of plugin '${slug}'`);
    const before = PluginsService.redact(plugin, installation.config);
    installation.reconfigure(merged);
    await this.installations.update(installation, plugin.manifest.secretFields);
    await this.audit.record({
      ...audited(installation, 'plugin.configured'),
      changes: changedFields({ config: before }, { config: PluginsService.redact(plugin, merged) }),
    });
    return { installation, plugin };
  }

  /** `action`: what the audit log calls it (an MCP server's removal is `mcp_server.deleted`). */
  @Transactional()
  async uninstall(caller: Principal, slug: string, action: 'plugin.uninstalled' | 'mcp_server.deleted' = 'plugin.uninstalled'): Promise<void> {
    const { installation } = await this.get(caller.organizationId, slug);
    const users = await this.usage.usersOf(caller.organizationId, slug);
    if (users.length) throw new DomainError('PLUGIN_IN_USE', `Plugin '${slug}' is used by ${users.join(', ')}`);
    if (!(await this.installations.delete(caller.organizationId, slug))) throw pluginNotFound(slug);
    await this.events.publish([{ organizationId: caller.organizationId, type: 'plugin.uninstalled', data: { slug } }]);
    await this.audit.record(audited(installation, action));
  }

  /** The config as shown to users: secret fields present but never their value. */
  static redact(plugin: Plugin, config: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, plugin.manifest.secretFields.includes(k) ? REDACTED : v]));
  }
}

/** An installation's entry in the audit log: a plugin by its slug, an MCP server by its id and name. */
export function audited(installation: Installation, action: AuditAction) {
  const server = installation.slug.startsWith('mcp.');
  return {
    organizationId: installation.organizationId,
    action,
    target: server
      ? { type: 'mcp_server', id: installation.id, name: installation.slug.slice('mcp.'.length) }
      : { type: 'plugin', id: installation.slug, name: installation.slug },
  };
}

/** A plugin that makes connections (mcp) is not installed or changed here: its own endpoint says how. */
function assertNotConnections(plugin: Plugin): void {
  if (!plugin.connections) return;
  throw new DomainError(
    'VALIDATION_FAILED',
    `Plugin '${plugin.manifest.slug}' is not installed from the catalog: connect each server with ${plugin.connections.endpoint}`,
  );
}

/**
 * A stored secret never follows a new destination: when a field that says where secrets go
 * (the llm plugin's `baseUrl`) changes, every stored secret must be entered again in the same
 * request (or removed with null), else 400 naming the fields.
 */
export function assertSecretsFollow(
  plugin: Plugin,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  entered: Record<string, unknown>,
): void {
  const moved = (plugin.manifest.secretDestinationFields ?? []).filter(
    (field) => canonicalJson(before[field]) !== canonicalJson(after[field]),
  );
  if (!moved.length) return;
  const stale = plugin.manifest.secretFields.filter((field) => before[field] !== undefined && !(field in entered));
  if (!stale.length) return;
  throw new DomainError(
    'VALIDATION_FAILED',
    `Changing ${moved.join(', ')} changes where the stored secrets go: enter ${stale.join(', ')} again (or null to remove)`,
    stale.map((field) => ({ path: `config.${field}`, message: `config.${field} must be entered again when ${moved.join(', ')} changes` })),
  );
}
