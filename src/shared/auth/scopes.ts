/**
 * What an API key may be narrowed to. A key with scopes can do only what both its owner's
 * role and its scopes allow; every route declares the one scope it needs.
 */
export const SCOPES = [
  'plugins:read',
  'plugins:write',
  'agents:read',
  'agents:write',
  'agents:execute',
  'workflows:read',
  'workflows:write',
  'workflows:run',
  'webhooks:read',
  'webhooks:write',
  'users:read',
  'users:write',
  'organization:read',
  'organization:write',
  'audit:read',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: unknown): value is Scope {
  return SCOPES.includes(value as Scope);
}

/** Every API key starts so (`plat_sa_`, `plat_pk_`); a bearer token that does is treated as a key, never as a JWT. */
export const API_KEY_MARK = 'plat_';

export function isApiKeyToken(token: string): boolean {
  return token.startsWith(API_KEY_MARK);
}
