import { loopbackClient } from '../../../../test/support/execute-request';
import { builtInPlugins } from '.';

describe('builtInPlugins', () => {
  const expressions = { evaluate: () => Promise.reject(new Error('not evaluated here')) };
  const plugins = builtInPlugins({ http: loopbackClient(), expressions });

  it('ships transform, http, llm and mcp (whose actions come from the servers an organization connects)', () => {
    expect(plugins.map((p) => p.manifest.slug)).toEqual(['transform', 'http', 'llm', 'mcp']);
    expect(plugins.filter((p) => p.connections).map((p) => p.manifest.slug)).toEqual(['mcp']);
  });

  it.each(plugins.map((p) => [p.manifest.slug, p] as const))('%s implements exactly what its manifest declares', (_slug, plugin) => {
    expect(Object.keys(plugin.agentKinds).sort()).toEqual(plugin.manifest.agentKinds.map((k) => k.name).sort());
    expect(Object.keys(plugin.actions).sort()).toEqual(plugin.manifest.actions.map((a) => a.name).sort());
    const secretProperties = plugin.manifest.secretFields.map(
      (field) => (plugin.manifest.configSchema.properties as Record<string, unknown>)[field],
    );
    expect(secretProperties).toEqual(plugin.manifest.secretFields.map(() => expect.objectContaining({ writeOnly: true }) as unknown));
  });
});
