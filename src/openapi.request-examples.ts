import { OpenAPIObject } from '@nestjs/swagger';

/** A self-signed IdP certificate valid until 2126, only to show the shape of the SAML settings. */
const IDP_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIBijCCATGgAwIBAgIUITk+2he0wSv9xONu2/QwF8U/uFMwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPaWRwLmV4YW1wbGUuY29tMCAXDTI2MTEyNjE2MDY1NVoYDzIx
MjYxMTAyMTYwNjU1WjAaMRgwFgYDVQQDDA9pZHAuZXhhbXBsZS5jb20wWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQT8pGwzyGJycIGUyuDcn9pQgc+SwPX9NvaxsVI
wIN9EI9S+BcEVK3ChviT2LZ7IVDdBd19ZL25IbGWwBQ6YIKPo1MwUTAdBgNVHQ4E
FgQUnaXwlPb/uzWFFk3Touxsg+gelykwHwYDVR0jBBgwFoAUnaXwlPb/uzWFFk3T
ouxsg+gelykwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiACYHIl
Z3KWwRbCWwOWLVhT83BMtohySKY3/H0H3pX1GQIgSuF8SZk5eKI5Ceh56YQ/pT3P
x6HyeWhNLf5Gh5hGfG4=
-----END CERTIFICATE-----`;

/**
 * One request body per operation (`METHOD /path` as the document writes it), shown as the
 * example of its request body. Each one works as it stands on a fresh organization that has
 * what its path names (test/openapi-examples.e2e-spec.ts sends every one and expects the
 * success status), except the values only the service can issue, which the spec marks and
 * fills in: refresh tokens, a license key, a SAML one-time code, a recent `since`.
 */
export const REQUEST_EXAMPLES: Record<string, object> = {
  'POST /api/organizations': {
    slug: 'acme-labs',
    name: 'Acme Labs',
    tier: 'team',
    admin: { email: 'admin@acme-labs.example', password: 'at-least-12-characters' },
  },
  'PATCH /api/organizations/{id}': { name: 'Acme Laboratories', seatQuota: 50 },
  'PATCH /api/subscription': { rateLimitPerMinute: 2000 },
  'POST /api/users': { email: 'ada@example.com', password: 'at-least-12-characters', role: 'member' },
  'PATCH /api/users/{id}': { role: 'viewer' },
  'PUT /api/license': { key: 'eyJhbGciOiJFZERTQSJ9.eyJjdXN0b21lciI6IkFjbWUifQ.c2lnbmF0dXJl' },
  'POST /api/auth/login': { email: 'ada@example.com', password: 'at-least-12-characters' },
  'POST /api/auth/refresh': { refreshToken: 'rt_2Xk9c0tAfQ8yN3wq5V7bLmZpR1sD4hJ6' },
  'POST /api/auth/logout': { refreshToken: 'rt_2Xk9c0tAfQ8yN3wq5V7bLmZpR1sD4hJ6' },
  'PATCH /api/auth/me/password': { currentPassword: 'at-least-12-characters', newPassword: 'a-new-long-passphrase' },
  'PUT /api/auth/saml': {
    idpEntityId: 'https://idp.example.com/metadata',
    idpSsoUrl: 'https://idp.example.com/sso',
    idpCertificates: [IDP_CERTIFICATE],
    roleMappings: [{ group: 'platform-admins', role: 'admin' }],
    defaultRole: 'viewer',
    allowedRedirects: ['https://app.example.com/signed-in'],
    enabled: true,
  },
  'POST /api/auth/saml/exchange': { code: 'Yc1b2pQ0mS8xLz4uV7nK3tR6wE9aH5dF2gJ0kN1oP8q' },
  'POST /api/auth/saml/sp-keys/rotate': { overlapHours: 168 },
  'POST /api/auth/saml/{org}/logout': { refreshToken: 'rt_2Xk9c0tAfQ8yN3wq5V7bLmZpR1sD4hJ6' },
  'PUT /api/auth/oidc': {
    issuer: 'https://login.example.com',
    clientId: 'platform',
    clientSecret: 'the-client-secret-the-provider-issued',
    roleMappings: [{ value: 'platform-admins', role: 'admin' }],
    defaultRole: 'viewer',
    allowedRedirects: ['https://app.example.com/signed-in'],
    enabled: true,
  },
  'POST /api/auth/oidc/exchange': { code: 'Qm4x9Zt2Lp7Rk1Vb8Nc3Hd6Wf0Js5Ga2Ey9Ku4Oi7Tq' },
  'POST /api/service-accounts': { name: 'nightly-export', role: 'member' },
  'PATCH /api/service-accounts/{id}': { name: 'nightly-export-v2', role: 'viewer' },
  'POST /api/service-accounts/{id}/api-keys': { name: 'ci', scopes: ['agents:read', 'agents:execute'] },
  'POST /api/service-accounts/{id}/api-keys/{keyId}/rotate': { graceSeconds: 3600 },
  'POST /api/auth/me/api-keys': { name: 'laptop', scopes: ['workflows:read', 'workflows:run'] },
  'POST /api/auth/me/api-keys/{keyId}/rotate': { graceSeconds: 3600 },
  'PUT /api/api-keys/policy': { maxLifetimeDays: 90 },
  'PUT /api/audit-events/settings': { retentionDays: 365 },
  'PATCH /api/plugins/{slug}': { config: { defaultHeaders: { 'X-Team': 'billing' }, origins: ['https://crm.example.com'] } },
  'POST /api/plugins/{slug}/install': {},
  'POST /api/mcp': { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  'POST /api/mcp-servers': {
    name: 'github',
    url: 'https://mcp.example.com/mcp',
    headers: { Authorization: 'Bearer mcp_example_token' },
    allowedTools: ['search_issues', 'get_issue'],
  },
  'PATCH /api/mcp-servers/{id}': { allowedTools: ['search_issues'] },
  'POST /api/agents': { name: 'shout', kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } },
  'PATCH /api/agents/{id}': { description: 'Shouts the text back', timeoutMs: 10000, maxAttempts: 2 },
  'POST /api/agents/{id}/execute': { input: { text: 'hi' } },
  'POST /api/workflows': {
    name: 'greet',
    inputSchema: { type: 'object', required: ['name'] },
    steps: [
      { id: 'shout', action: 'transform.jsonata', with: { expression: '$uppercase(name)' } },
      { id: 'greet', action: 'transform.jsonata', with: { expression: "'hello ' & $" }, needs: ['shout'], input: 'steps.shout.output' },
    ],
    output: "{ 'message': steps.greet.output }",
  },
  'PUT /api/workflows/{id}': {
    name: 'greet',
    description: 'Greets loudly',
    inputSchema: { type: 'object', required: ['name'] },
    steps: [{ id: 'greet', action: 'transform.jsonata', with: { expression: "'HELLO ' & $uppercase(name) & '!'" } }],
    output: "{ 'message': steps.greet.output }",
  },
  'POST /api/workflows/{id}/run': { input: { name: 'Ada' } },
  'POST /api/workflows/{id}/runs/{runId}/retry': { fromStep: 'greet', version: 'latest' },
  'POST /api/workflows/{id}/runs/{runId}/steps/{stepId}/complete': { data: { approved: true, comment: 'Within budget' } },
  'POST /api/events': { name: 'payment.settled', key: 'order-1001', data: { amount: 42, currency: 'EUR' } },
  'POST /api/workflows/{id}/schedules': { cron: '30 2 * * *', timezone: 'Europe/Berlin', input: { name: 'Ada' } },
  'PATCH /api/workflows/{id}/schedules/{sid}': { cron: '0 9 * * 1-5', enabled: false },
  'POST /api/workflows/{id}/triggers': {
    scheme: 'hmac-sha256',
    name: 'GitHub pushes',
    secret: 'a-long-random-secret',
    dedupe: 'header',
    dedupeHeader: 'X-GitHub-Delivery',
    mapping: "{ 'name': body.pusher.name }",
  },
  'PATCH /api/workflows/{id}/triggers/{tid}': { enabled: false },
  'POST /api/workflows/{id}/triggers/{tid}/rotate-secret': { graceSeconds: 3600 },
  'POST /api/webhooks': { url: 'https://hooks.example.com/platform', eventTypes: ['workflow.run.*', 'agent.execution.failed'] },
  'PATCH /api/webhooks/{id}': { description: 'Our run dashboard', eventTypes: ['workflow.run.*'] },
  'POST /api/webhooks/{id}/rotate-secret': { graceSeconds: 3600 },
  'POST /api/webhooks/{id}/recover': { since: '2026-01-01T00:00:00Z' },
};

/** Sets each operation's request body example from REQUEST_EXAMPLES. */
export function addRequestExamples(document: OpenAPIObject): void {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['post', 'put', 'patch'] as const) {
      const media = (item[method]?.requestBody as { content?: Record<string, { example?: unknown }> } | undefined)?.content?.[
        'application/json'
      ];
      const example = REQUEST_EXAMPLES[`${method.toUpperCase()} ${path}`];
      if (media && example) media.example = example;
    }
  }
}
