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

/**
 * What started an execution or a run, as its `triggeredBy` shows it. `person` is the user behind
 * it where that is not its `id`: a personal key's owner, whoever pressed a schedule's trigger
 * now or replayed a trigger's event, and for what a run or an execution started (a child run,
 * an agent's tool call) the person behind that one, so the top-level starter's.
 */
export type Trigger = (
  | ApiTrigger
  | McpTrigger
  | ScheduleTrigger
  | WebhookTrigger
  | { type: 'workflow_run'; id: string }
  /** Another agent's execution, whose model called this agent or workflow as a tool. */
  | { type: 'agent_execution'; id: string }
) & { person?: string };

/** The person behind a caller: the signed-in user, a personal key's owner; a service account's key has none. */
export function personOf(principal: Principal): string | undefined {
  const { credential } = principal;
  return credential.type === 'api_key' && credential.serviceAccountId ? undefined : principal.userId;
}

/** The person behind what `trigger` started; none for a service account's key, an outside request or a schedule's own time. */
export function personBehind(trigger: Trigger): string | undefined {
  if (trigger.person) return trigger.person;
  // Recorded before `person` was: a session's user is the id, and so is an MCP client's (a service account's never matches one).
  return trigger.type === 'user' || trigger.type === 'mcp' ? trigger.id : undefined;
}

/** `{ person }` for a trigger, or nothing when there is none. */
export function withPerson(person: string | undefined): { person?: string } {
  return person ? { person } : {};
}

/** The trigger of something a caller starts through the API. */
export function triggerOf(principal: Principal): ApiTrigger & { person?: string } {
  const { credential } = principal;
  if (credential.type === 'session') return { type: 'user', id: principal.userId };
  return {
    type: 'api_key',
    id: credential.keyId,
    ...(credential.serviceAccountId ? { serviceAccountId: credential.serviceAccountId } : withPerson(principal.userId)),
  };
}

/** The trigger of something an MCP client starts through `/api/mcp`. */
export function mcpTriggerOf(principal: Principal): McpTrigger & { person?: string } {
  const { credential } = principal;
  return {
    type: 'mcp',
    id: principal.userId,
    ...(credential.type === 'api_key' ? { keyId: credential.keyId } : {}),
    ...withPerson(personOf(principal)),
  };
}
