/**
 * The one catalog of error codes. Each code is bound to its HTTP status here and nowhere
 * else, so a code cannot exist without a status (the `satisfies` clause makes the compiler
 * check that every entry is a valid status).
 */
export const ERROR_CATALOG = {
  VALIDATION_FAILED: { status: 400, when: 'body, query or path fails validation; malformed JSON' },
  WORKFLOW_INVALID: { status: 400, when: 'a workflow definition fails graph checks' },
  WORKFLOW_CYCLE: {
    status: 400,
    when: 'a workflow or an agent that would start itself through the workflows and agents its steps and tools start',
  },
  LICENSE_INVALID: { status: 400, when: 'a license key that fails verification' },
  UNAUTHORIZED: { status: 401, when: 'no token, bad token, bad signature, wrong issuer or audience' },
  TOKEN_EXPIRED: { status: 401, when: 'the access token has expired' },
  INVALID_CREDENTIALS: { status: 401, when: 'login failed, or a refresh token that is unknown, expired or revoked' },
  SAML_INVALID: { status: 401, when: 'a SAML response that fails validation' },
  OIDC_INVALID: { status: 401, when: 'an OpenID Connect sign-in that fails validation (state, code, ID token, claims) or is refused' },
  OIDC_EMAIL_NOT_VERIFIED: {
    status: 401,
    when: "an OpenID Connect sign-in whose email the provider does not say is verified (email_verified missing or false), unless the organization's settings allow it",
  },
  FORBIDDEN: { status: 403, when: 'the role may not do this; or an API key lacks the scope, or tries what only a signed-in user may do' },
  FEATURE_NOT_AVAILABLE: { status: 403, when: 'the tier does not include the feature' },
  LICENSE_REQUIRED: { status: 403, when: "a tier above what the installation's license allows" },
  SEAT_LIMIT_REACHED: { status: 403, when: "a user beyond the license's seats" },
  NOT_FOUND: { status: 404, when: 'no such route (or no such method on a route)' },
  ORGANIZATION_NOT_FOUND: { status: 404, when: 'no such organization' },
  USER_NOT_FOUND: { status: 404, when: 'no such user in the caller organization' },
  PLUGIN_NOT_FOUND: { status: 404, when: 'the plugin named in the request is not installed' },
  PLUGIN_NOT_IN_CATALOG: { status: 404, when: 'install of a slug the catalog does not have' },
  AGENT_NOT_FOUND: { status: 404, when: 'no such agent in the caller organization' },
  WORKFLOW_NOT_FOUND: { status: 404, when: 'no such workflow in the caller organization' },
  EXECUTION_NOT_FOUND: { status: 404, when: 'no such execution of the agent' },
  SCHEDULE_NOT_FOUND: { status: 404, when: 'no such schedule of the workflow' },
  TRIGGER_NOT_FOUND: { status: 404, when: 'no such webhook trigger (of the workflow; or disabled, for its hook)' },
  TRIGGER_EVENT_NOT_FOUND: { status: 404, when: 'no such event of the webhook trigger' },
  RUN_NOT_FOUND: { status: 404, when: 'no such run of the workflow' },
  STEP_NOT_FOUND: { status: 404, when: 'no such step in the run (or, for its items, not a map step that began)' },
  WEBHOOK_NOT_FOUND: { status: 404, when: 'no such webhook in the caller organization' },
  SERVICE_ACCOUNT_NOT_FOUND: { status: 404, when: 'no such service account in the caller organization' },
  API_KEY_NOT_FOUND: { status: 404, when: 'no such API key of the holder (or revoked)' },
  MCP_SERVER_NOT_FOUND: { status: 404, when: 'no such MCP server connected to the caller organization' },
  WEBHOOK_MESSAGE_NOT_FOUND: { status: 404, when: 'no such message in the webhook delivery log' },
  METHOD_NOT_ALLOWED: { status: 405, when: 'GET or DELETE on /api/mcp, a stateless MCP endpoint that only takes POST; Allow is set' },
  EMAIL_TAKEN: { status: 409, when: 'a user with this email already exists' },
  ORGANIZATION_SLUG_TAKEN: { status: 409, when: 'an organization with this slug already exists' },
  PLUGIN_ALREADY_INSTALLED: { status: 409, when: 'install of an installed plugin with a different config' },
  PLUGIN_IN_USE: { status: 409, when: 'uninstall while agents or workflows use it' },
  AGENT_IN_USE: { status: 409, when: 'delete of an agent a workflow uses' },
  CONCURRENCY_LIMIT: {
    status: 409,
    when: "a run's error, never a response: canceled by its workflow's concurrency limit (onLimit cancelNew or cancelOldest)",
  },
  NOT_CANCELABLE: { status: 409, when: 'cancel of a finished run or execution' },
  STEP_NOT_WAITING: { status: 409, when: 'an answer to a step that is not waiting for one (answered already, timed out, its run ended)' },
  RUN_NOT_FINISHED: { status: 409, when: 'retry of a run that is still queued, running or waiting' },
  RUN_ALREADY_RETRIED: { status: 409, when: 'retry of a run retried before (the message names its retry: retry that one)' },
  EXECUTION_NOT_FINISHED: { status: 409, when: 'retry of an execution that is still queued, running or waiting' },
  EXECUTION_ALREADY_RETRIED: {
    status: 409,
    when: 'retry of an execution retried before (the message names its retry: retry that one)',
  },
  NOTHING_TO_RETRY: { status: 409, when: 'retry of a run that succeeded without `fromStep`, or of an execution that succeeded' },
  WEBHOOK_MESSAGE_PENDING: { status: 409, when: 'redeliver of a webhook message still queued or being delivered' },
  MCP_SERVER_NAME_TAKEN: { status: 409, when: 'an MCP server (or plugin) of the organization already has this name' },
  MCP_SERVER_LIMIT_REACHED: { status: 409, when: 'an MCP server beyond the 50 an organization may connect' },
  WEBHOOK_LIMIT_REACHED: { status: 409, when: "a webhook endpoint beyond the organization's limit" },
  SCHEDULE_LIMIT_REACHED: { status: 409, when: "a schedule beyond the 20 a workflow may have, or beyond its organization's quota by tier" },
  TRIGGER_LIMIT_REACHED: { status: 409, when: 'a webhook trigger beyond the 20 a workflow may have' },
  API_KEY_LIMIT_REACHED: { status: 409, when: 'an API key beyond the 20 a user or service account may hold' },
  SERVICE_ACCOUNT_LIMIT_REACHED: { status: 409, when: "a service account beyond the organization's 100" },
  WEBHOOK_DISABLED: { status: 409, when: 'redeliver, recover or test on a disabled webhook endpoint' },
  IDEMPOTENCY_KEY_REUSED: { status: 409, when: 'same Idempotency-Key, different request' },
  PAYLOAD_TOO_LARGE: { status: 413, when: 'body over the limit (1 MiB; 2 MiB for agent execute and workflow run)' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, when: 'a body that is not JSON' },
  RATE_LIMIT_EXCEEDED: { status: 429, when: 'over the rate limit; Retry-After is set' },
  INTERNAL_ERROR: { status: 500, when: 'anything unforeseen (logged with the request id)' },
  MCP_SERVER_UNREACHABLE: {
    status: 502,
    when: 'connecting or refreshing an MCP server that cannot be reached or does not answer tools/list (the message says why)',
  },
  SERVICE_UNAVAILABLE: { status: 503, when: 'database unreachable; Retry-After is set' },
} as const satisfies Record<string, { status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 500 | 502 | 503; when: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export function statusOf(code: ErrorCode): number {
  return ERROR_CATALOG[code].status;
}

/** The catalog as a Markdown table, for docs/reference/errors.md and the OpenAPI description. */
export function errorCatalogMarkdown(): string {
  const rows = Object.entries(ERROR_CATALOG).map(([code, { status, when }]) => `| \`${code}\` | ${status} | ${when} |`);
  return ['| code | status | when |', '|---|---|---|', ...rows].join('\n');
}
