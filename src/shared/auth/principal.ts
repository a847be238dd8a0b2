import { DomainError } from '../errors/domain-error';
import type { Scope } from './scopes';

export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** How a person signed in. */
export type SignInMethod = 'password' | 'saml' | 'oidc';

/** How the caller proved who it is. */
export type Credential =
  /** A signed-in person's access token (JWT); `via` how they signed in (tokens issued before it was recorded have none). */
  | { type: 'session'; via?: SignInMethod }
  /** An API key; `scopes` null: everything the role allows. */
  | { type: 'api_key'; keyId: string; serviceAccountId: string | null; scopes: readonly Scope[] | null };

/** Who is calling: set on the request by the auth guard, read by controllers. */
export interface Principal {
  /** The user, or the service account that holds the key. */
  userId: string;
  organizationId: string;
  role: Role;
  /** Only through a session: API keys never carry operator rights. */
  isOperator: boolean;
  /** The user's email; a service account's name. */
  email: string;
  credential: Credential;
}

/**
 * 403 FORBIDDEN unless the caller is a signed-in person (a session): what an API key may never
 * do, whatever its role and scopes (`what`, e.g. 'set a password'; without it: 'do this'). The
 * roles guard refuses @SessionOnly() routes with the same words; services call it where the
 * body decides (a password or a role in a PATCH).
 */
export function assertSession(principal: Principal, what = 'do this'): void {
  if (principal.credential.type === 'session') return;
  throw new DomainError('FORBIDDEN', `Only a signed-in user may ${what}; API keys cannot`);
}

/** Who started something through the API. */
export type ApiTrigger = { type: 'user'; id: string } | { type: 'api_key'; id: string; serviceAccountId?: string };

/** A workflow schedule's occurrence (`scheduledFor`, ISO 8601). */
export type ScheduleTrigger = { type: 'schedule'; id: string; scheduledFor: string };

/** A request to a workflow's inbound webhook trigger, recorded as the trigger's event. */
export type WebhookTrigger = { type: 'webhook'; id: string; eventId: string };

/**
 * A call of an MCP client through `/api/mcp`: `id` is the user (or the service account that
 * holds the key), `keyId` the API key when it called with one.
 */
export type McpTrigger = { type: 'mcp'; id: string; keyId?: string };

/** What started an execution or a run, as its `triggeredBy` shows it. */
export type Trigger =
  | ApiTrigger
  | McpTrigger
  | ScheduleTrigger
  | WebhookTrigger
  | { type: 'workflow_run'; id: string }
  /** Another agent's execution, whose model called this agent or workflow as a tool. */
  | { type: 'agent_execution'; id: string };

/** The trigger of something a caller starts through the API. */
export function triggerOf(principal: Principal): ApiTrigger {
  const { credential } = principal;
  if (credential.type === 'session') return { type: 'user', id: principal.userId };
  return {
    type: 'api_key',
    id: credential.keyId,
    ...(credential.serviceAccountId ? { serviceAccountId: credential.serviceAccountId } : {}),
  };
}

/** The trigger of something an MCP client starts through `/api/mcp`. */
export function mcpTriggerOf(principal: Principal): McpTrigger {
  const { credential } = principal;
  return { type: 'mcp', id: principal.userId, ...(credential.type === 'api_key' ? { keyId: credential.keyId } : {}) };
}
