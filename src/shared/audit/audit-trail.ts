import { canonicalJson } from '../json/canonical-json';

/**
 * The audit trail's port: who did what to which object, written by the module that made the
 * change, in the change's own transaction (a committed change always has its event; a
 * rolled-back one never does). The audit module provides it.
 */

/** How the actor proved who it is. */
export type AuditVia = 'password' | 'saml' | 'oidc' | 'key';

export interface AuditActor {
  type: 'user' | 'service_account' | 'api_key' | 'system' | 'anonymous';
  /** The user, service account or key; null for the system and anonymous callers. */
  id: string | null;
  /** An email, a service account's or key's name, `system`; what the caller claimed when anonymous. */
  name: string | null;
  ip: string | null;
  userAgent: string | null;
  via: AuditVia | null;
}

export interface AuditTarget {
  type: string;
  id: string | null;
  name: string | null;
}

export type AuditOutcome = 'success' | 'failure' | 'denied';

/** What changed: the object before and after, with every secret redacted (`redacted` does it). */
export interface AuditChanges {
  before?: unknown;
  after?: unknown;
}

/** One entry, as the module that made the change gives it; `actor` defaults to the request's caller. */
export interface AuditEntry {
  organizationId: string;
  /** From AUDIT_ACTIONS. */
  action: AuditAction;
  target: AuditTarget | null;
  outcome?: AuditOutcome;
  changes?: AuditChanges | null;
  /** Who did it, when not the caller of the current request (a sign-in names the user it signed in). */
  actor?: Partial<AuditActor>;
}

export abstract class AuditTrail {
  /** Appends the entries inside the current transaction (or alone, when there is none). */
  abstract record(...entries: AuditEntry[]): Promise<void>;
}

/**
 * Every action the audit log records, `object.verb`, and what it means: the catalog the
 * documentation lists and the `action` filter accepts.
 */
export const AUDIT_ACTIONS = {
  'auth.signed_in': 'A person signed in (outcome failure: a wrong password or a refused assertion)',
  'auth.signed_out': 'A person signed out',
  'user.created': 'A user was created (by an admin, or on first sign-in through SAML or OIDC)',
  'user.updated': 'A user was changed: name, role, active, password',
  'user.deleted': 'A user was deleted',
  'service_account.created': 'A service account was created',
  'service_account.updated': 'A service account was changed',
  'service_account.deleted': 'A service account was deleted',
  'api_key.created': 'An API key was created',
  'api_key.rotated': 'An API key was rotated',
  'api_key.revoked': 'An API key was revoked',
  'api_key.first_used': 'An API key authenticated a request for the first time',
  'api_key.policy_updated': "The organization's key policy was changed",
  'saml.settings_updated': 'The SAML settings were set or changed',
  'saml.settings_deleted': 'The SAML settings were removed',
  'saml.sp_keys_rotated': "The organization's SAML service provider keys (signing, encryption) were rotated",
  'oidc.settings_updated': 'The OpenID Connect settings were set or changed',
  'oidc.settings_deleted': 'The OpenID Connect settings were removed',
  'organization.updated': 'The organization was changed (its name, its history retention)',
  'subscription.updated': "The organization's tier changed",
  'license.installed': 'A license was installed',
  'plugin.installed': 'A plugin was installed',
  'plugin.configured': "A plugin's configuration was changed",
  'plugin.uninstalled': 'A plugin was uninstalled',
  'mcp_server.created': 'An MCP server was added',
  'mcp_server.updated': 'An MCP server was changed',
  'mcp_server.deleted': 'An MCP server was removed',
  'agent.created': 'An agent was created',
  'agent.updated': 'An agent was changed',
  'agent.deleted': 'An agent was deleted',
  'workflow.created': 'A workflow was created',
  'workflow.version_created': 'A workflow got a new version',
  'workflow.deleted': 'A workflow was deleted',
  'run.canceled': 'A run was canceled',
  'run.retried': 'A run was retried',
  'run.approved': 'An approval step was answered (approved or rejected)',
  'execution.canceled': 'An execution was canceled',
  'execution.retried': 'An execution was retried',
  'trigger.created': 'A trigger was created',
  'trigger.updated': 'A trigger was changed (its secret rotated)',
  'trigger.deleted': 'A trigger was deleted',
  'schedule.created': 'A schedule was created',
  'schedule.updated': 'A schedule was changed',
  'schedule.deleted': 'A schedule was deleted',
  'webhook_endpoint.created': 'A webhook endpoint was created',
  'webhook_endpoint.updated': 'A webhook endpoint was changed',
  'webhook_endpoint.secret_rotated': "A webhook endpoint's signing secret was rotated",
  'webhook_endpoint.deleted': 'A webhook endpoint was deleted',
  'audit.exported': 'The audit log was exported',
  'audit.settings_updated': "The audit log's retention was changed",
  'audit.purged': 'Events older than the retention were purged',
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

const SECRET_KEY = /(secret|password|token|private|credential|^key$|apikey|api_key|authorization|cookie)/i;
const REDACTED = '[redacted]';

/** `value` with every field whose name says it holds a secret replaced by `[redacted]`, at any depth. */
export function redacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, field]) => [
      key,
      SECRET_KEY.test(key) && field != null ? REDACTED : redacted(field),
    ]),
  );
}

/** The fields of `after` whose values differ from `before`'s, each side with its own value (timestamps left out). */
export function changedFields(before: object, after: object): AuditChanges {
  const old = before as Record<string, unknown>;
  const now = after as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].filter(
    (key) => !['createdAt', 'updatedAt'].includes(key) && canonicalJson(old[key]) !== canonicalJson(now[key]),
  );
  return { before: Object.fromEntries(keys.map((k) => [k, old[k]])), after: Object.fromEntries(keys.map((k) => [k, now[k]])) };
}
