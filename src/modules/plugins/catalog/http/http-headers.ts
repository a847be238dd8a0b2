/** Installation config of the http plugin. */
export interface HttpInstallConfig {
  defaultHeaders?: Record<string, string>;
  authorization?: string;
}

/** Header layers merged left to right, names lower-cased so a later layer really replaces. */
export function mergeHeaders(...layers: Array<Record<string, string> | undefined>): Record<string, string> {
  const merged: Record<string, string> = {};
  for (const layer of layers) {
    for (const [name, value] of Object.entries(layer ?? {})) merged[name.toLowerCase()] = value;
  }
  return merged;
}

/** The installation's default headers, with its Authorization when set. */
export function installHeaders(pluginConfig: Record<string, unknown>): Record<string, string> {
  const { defaultHeaders, authorization } = pluginConfig as HttpInstallConfig;
  return mergeHeaders(defaultHeaders, authorization ? { authorization } : undefined);
}

export const headersSchema = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 8192 },
  propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$" },
  maxProperties: 64,
};
