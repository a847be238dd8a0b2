import { Injectable } from '@nestjs/common';
import { ErrorDetail } from '../../../shared/errors/domain-error';
import { ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { schemaProblems } from '../../../shared/json-schema/json-schema.validator';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { builtInPlugins } from '../catalog';
import { Capability, CapabilityManifest, Plugin } from '../domain/plugin';

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

  find(slug: string): Plugin | undefined {
    return this.plugins.get(slug);
  }

  /**
   * Problems of an agent kind's or action's config, with paths under `root`: its JSON Schema
   * first, then (when that holds) the capability's own checks, such as an expression that
   * must compile. The capability must exist.
   */
  configProblems(kind: 'agentKinds' | 'actions', qualified: string, config: Record<string, unknown>, root: string): ErrorDetail[] {
    const { capability } = this.capability(kind, qualified)!;
    const manifest = this.manifest(kind, qualified)!;
    const shape = schemaProblems(manifest.configSchema, config, root);
    if (shape.length) return shape;
    return (capability.checkConfig?.(config) ?? []).map((p) => ({ path: `${root}.${p.path}`, message: p.message }));
  }

  /** The manifest of an agent kind or action. */
  manifest(kind: 'agentKinds' | 'actions', qualified: string): CapabilityManifest | undefined {
    const [slug, name] = qualified.split('.', 2);
    return this.plugins.get(slug)?.manifest[kind].find((c) => c.name === name);
  }

  /** `<slug>.<name>` of an agent kind or action, e.g. `http.agent`. */
  capability(kind: 'agentKinds' | 'actions', qualified: string): { plugin: Plugin; capability: Capability } | undefined {
    const [slug, name] = qualified.split('.', 2);
    const plugin = this.plugins.get(slug);
    const capability = plugin && name ? plugin[kind][name] : undefined;
    return plugin && capability ? { plugin, capability } : undefined;
  }
}
