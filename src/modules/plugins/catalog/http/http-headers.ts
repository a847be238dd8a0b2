/** Installation config of the http plugin. */
export interface HttpInstallConfig {
  defaultHeaders?: Record<string, string>;
  authorization?: string;
  /** The only origins (`https://api.example.com`) the installation's headers are sent to. */
  origins?: string[];
}

/** Header layers merged left to right, names lower-cased so a later layer really replaces. */
export function mergeHeaders(...layers: Array<Record<string, string> | undefined>): Record<string, string> {
  const merged: Record<string, string> = {};
  for (const layer of layers) {
    for (const [name, value] of Object.entries(layer ?? {})) merged[name.toLowerCase()] = value;
  }
  return merged;
}

/**
 * The installation's default headers, with its Authorization when set, for a request to `url`:
 * only when the URL's origin is one the installation lists, so an admin who points an agent or
 * step at another host never sends it the installation's credentials.
 */
export function installHeaders(pluginConfig: Record<string, unknown>, url: string): Record<string, string> {
  const { defaultHeaders, authorization, origins = [] } = pluginConfig as HttpInstallConfig;
  if (!origins.includes(originOf(url))) return {};
  return mergeHeaders(defaultHeaders, authorization ? { authorization } : undefined);
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

export const originsSchema = {
  type: 'array',
  maxItems: 32,
  uniqueItems: true,
  items: { type: 'string', pattern: '^https?://[^/?#\\s]+$', maxLength: 2048 },
  description: 'Origins (scheme://host[:port]) the installation headers are sent to; required with them.',
};

export const headersSchema = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 8192 },
  propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$" },
  maxProperties: 64,
};
