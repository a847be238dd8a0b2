import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { parseAllowList } from '../../../shared/outbound/address-policy';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { builtInPlugins } from '../catalog';
import { Capability, Plugin } from '../domain/plugin';

/** The catalog: every plugin this build ships, by slug. */
@Injectable()
export class PluginRegistry {
  private readonly plugins: Map<string, Plugin>;

  constructor(config: AppConfig) {
    const http = new OutboundHttp({ allowList: parseAllowList(config.outboundAllowList) });
    this.plugins = new Map(builtInPlugins({ http }).map((p) => [p.manifest.slug, p]));
  }

  all(): Plugin[] {
    return [...this.plugins.values()];
  }

  find(slug: string): Plugin | undefined {
    return this.plugins.get(slug);
  }

  /** `<slug>.<name>` of an agent kind or action, e.g. `http.agent`. */
  capability(kind: 'agentKinds' | 'actions', qualified: string): { plugin: Plugin; capability: Capability } | undefined {
    const [slug, name] = qualified.split('.', 2);
    const plugin = this.plugins.get(slug);
    const capability = plugin && name ? plugin[kind][name] : undefined;
    return plugin && capability ? { plugin, capability } : undefined;
  }
}
