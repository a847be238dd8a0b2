import { Injectable } from '@nestjs/common';
import { ErrorDetail } from '../../../shared/errors/domain-error';
import { ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { schemaProblems, tenantValueProblems } from '../../../shared/json-schema/json-schema.validator';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { builtInPlugins } from '../catalog';
import { Capability, CapabilityManifest, connectionOf, installationSlug, JsonSchema, Plugin } from '../domain/plugin';

/** The catalog: every plugin this build ships, by slug. */
@Injectable()
export class PluginRegistry {
  private readonly plugins: Map<string, Plugin>;

  constructor(outbound: OutboundPolicy, expressions: ExpressionSandbox) {
    const http = new OutboundHttp({ allowList: outbound.allowList });
    this.plugins = new Map(builtInPlugins({ http, expressions }).map((p) => [p.manifest.slug, p]));
  }

  all(): Plugin[] {
    return [...this.plugins.values()];
  }

  /** A plugin by slug; a connection's slug (`mcp.github`) answers the plugin that makes it. */
  find(slug: string): Plugin | undefined {
    const connection = connectionOf(slug);
    return connection ? this.plugins.get(connection.plugin) : this.plugins.get(slug);
  }

  /**
   * Problems of an agent kind's or action's config, with paths under `root`: its JSON Schema
   * first, then (when that holds) the capability's own checks, such as an expression that
   * must compile. The capability must exist (for a connection's action, in `pluginConfig`).
   * A connection's schemas come from a remote server: they are checked on the tenant validator.
   */
  configProblems(
    kind: 'agentKinds' | 'actions',
    qualified: string,
    config: Record<string, unknown>,
    root: string,
    pluginConfig: Record<string, unknown> | null = null,
  ): ErrorDetail[] {
    const { capability } = this.capability(kind, qualified)!;
    const manifest = this.manifest(kind, qualified, pluginConfig)!;
    const connected = connectionOf(installationSlug(qualified)) !== null;
    const shape = (connected ? tenantValueProblems : schemaProblems)(manifest.configSchema, config, root);
    if (shape.length) return shape;
    return (capability.checkConfig?.(config) ?? []).map((p) => ({ path: `${root}.${p.path}`, message: p.message }));
  }

  /**
   * The manifest of an agent kind or action; a connection's action (`mcp.github.search`) is
   * described by the connection's stored config, `pluginConfig`.
   */
  manifest(
    kind: 'agentKinds' | 'actions',
    qualified: string,
    pluginConfig: Record<string, unknown> | null = null,
  ): CapabilityManifest | undefined {
    const connected = this.connected(kind, qualified);
    if (connected)
      return pluginConfig ? connected.plugin.connections!.actions(pluginConfig).find((c) => c.name === connected.name) : undefined;
    const [slug, name] = qualified.split('.', 2);
    return this.plugins.get(slug)?.manifest[kind].find((c) => c.name === name);
  }

  /**
   * What a caller (a model calling the action as a tool) still gives once the action's config
   * is set: its input schema, less what a connection's config fixes.
   */
  remainingInput(qualified: string, manifest: CapabilityManifest, config: Record<string, unknown>): JsonSchema | null {
    if (!manifest.inputSchema) return null;
    const connected = this.connected('actions', qualified);
    return connected ? connected.plugin.connections!.remainingInput(manifest.inputSchema, config) : manifest.inputSchema;
  }

  /** `<slug>.<name>` of an agent kind or action, e.g. `http.agent`; or a connection's action, `mcp.<server>.<tool>`. */
  capability(kind: 'agentKinds' | 'actions', qualified: string): { plugin: Plugin; capability: Capability } | undefined {
    const connected = this.connected(kind, qualified);
    if (connected) return { plugin: connected.plugin, capability: connected.plugin.connections!.action(connected.name) };
    const [slug, name] = qualified.split('.', 2);
    const plugin = this.plugins.get(slug);
    const capability = plugin && name ? plugin[kind][name] : undefined;
    return plugin && capability ? { plugin, capability } : undefined;
  }

  /** A connection's action: its plugin and its name within the connection. */
  private connected(kind: 'agentKinds' | 'actions', qualified: string): { plugin: Plugin; name: string } | undefined {
    const installation = installationSlug(qualified);
    const connection = connectionOf(installation);
    const plugin = connection && kind === 'actions' ? this.plugins.get(connection.plugin) : undefined;
    const name = qualified.slice(installation.length + 1);
    return plugin?.connections && name ? { plugin, name } : undefined;
  }
}
