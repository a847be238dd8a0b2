import { randomUUID } from 'node:crypto';
import { AppConfig } from '../src/config/app-config';
import { LoginCode } from '../src/modules/auth/domain/login-code';
import { SamlStore } from '../src/modules/auth/domain/saml.store';
import { REQUEST_EXAMPLES } from '../src/openapi.request-examples';
import { ERROR_CATALOG, ErrorCode } from '../src/shared/errors/error-catalog';
import { OutboundHttp } from '../src/shared/outbound/outbound-http';
import { eventually } from './support/eventually';
import { LoopbackMcpServer, startMcpServer, textTool } from './support/mcp-server';
import { startOidcProvider, TestOidcProvider } from './support/oidc-provider';
import { DeclaredAnswers } from './support/declared-answers';
import { bearer, createTestApp, TestApp, TestUser } from './support/test-app';

interface ErrorExample {
  summary: string;
  value: { error: { code: string; message: string; status: number; details?: unknown[] } };
}
interface Response {
  description: string;
  content?: { 'application/json'?: { examples?: Record<string, { $ref: string }> } };
}
type Document = {
  paths: Record<string, Record<string, { responses: Record<string, Response> }>>;
  components: { examples: Record<string, ErrorExample> };
};

describe('the error examples of the OpenAPI document', () => {
  let t: TestApp;
  let document: Document;

  beforeAll(async () => {
    t = await createTestApp();
    document = (await t.http().get('/api/docs-json')).body as Document;
  });
  afterAll(() => t.close());

  /** The examples of one operation's answer with this status, by code (each a reference to components.examples, resolved). */
  const examplesOf = (path: string, method: string, status: number): Record<string, ErrorExample> => {
    const examples = document.paths[path][method].responses[String(status)]?.content?.['application/json']?.examples ?? {};
    return Object.fromEntries(
      Object.entries(examples).map(([code, { $ref }]) => {
        expect($ref).toBe(`#/components/examples/${code}`);
        return [code, document.components.examples[code]];
      }),
    );
  };

  it('shows, for every error answer of every operation, one example per code with its own code and status', () => {
    let answers = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue;
          answers += 1;
          const codes = /Error envelope; code ([A-Z_]+(?: \| [A-Z_]+)*)/.exec(response.description)![1].split(' | ');
          const examples = examplesOf(path, method, Number(status));
          expect({ operation: `${method} ${path} ${status}`, codes: Object.keys(examples) }).toEqual({
            operation: `${method} ${path} ${status}`,
            codes,
          });
          for (const [code, example] of Object.entries(examples)) {
            expect(ERROR_CATALOG[code as ErrorCode]?.status).toBe(Number(status));
            expect(example.value.error).toMatchObject({ code, status: Number(status), message: expect.any(String) });
            expect(example.summary).toBe(ERROR_CATALOG[code as ErrorCode].when);
          }
        }
      }
    }
    expect(answers).toBeGreaterThan(100);
    // Every code of the catalog has its example, and only the validation failure shows details.
    expect(Object.keys(document.components.examples).sort()).toEqual(Object.keys(ERROR_CATALOG).sort());
    expect(document.components.examples.VALIDATION_FAILED.value.error.details).toEqual([
      { path: 'email', message: 'email must be an email' },
    ]);
  });

  it("matches what the service answers: each error's code is among the examples of its status", async () => {
    const org = await t.newOrg();
    const answers = [
      { path: '/api/agents/{id}', method: 'get', send: () => t.http().get(`/api/agents/${randomUUID()}`).set(bearer(org.admin)) },
      { path: '/api/agents', method: 'get', send: () => t.http().get('/api/agents') },
      { path: '/api/agents', method: 'post', send: () => t.http().post('/api/agents').set(bearer(org.admin)).send({ name: 7 }) },
      {
        path: '/api/agents',
        method: 'post',
        send: () => t.http().post('/api/agents').set(bearer(org.viewer)).send({ name: 'x', kind: 'transform.jsonata' }),
      },
      { path: '/api/webhooks', method: 'get', send: () => t.http().get('/api/webhooks').set(bearer(org.admin)) },
      {
        path: '/api/plugins/{slug}',
        method: 'delete',
        send: () => t.http().delete('/api/plugins/transform').set(bearer(org.admin)),
      },
    ];
    const seen: string[] = [];
    for (const { path, method, send } of answers) {
      const res = await send();
      const example = examplesOf(path, method, res.status)[res.body.error?.code];
      expect({ operation: `${method} ${path}`, status: res.status, example: example?.value.error }).toEqual({
        operation: `${method} ${path}`,
        status: res.status,
        example: expect.objectContaining({ code: res.body.error.code, status: res.status }),
      });
      seen.push(res.body.error.code);
    }
    expect(seen).toEqual([
      'AGENT_NOT_FOUND',
      'UNAUTHORIZED',
      'VALIDATION_FAILED',
      'FORBIDDEN',
      'FEATURE_NOT_AVAILABLE',
      'PLUGIN_NOT_FOUND',
    ]);
  });
});

type Operation = {
  requestBody?: { content?: Record<string, { example?: Record<string, unknown> }> };
  responses: Record<string, unknown>;
};

describe('the request body examples of the OpenAPI document', () => {
  let t: TestApp;
  let operations: Map<string, Operation>;
  let declared: DeclaredAnswers;
  let mcp: LoopbackMcpServer;
  let oidc: TestOidcProvider;
  const sent = new Set<string>();

  beforeAll(async () => {
    oidc = await startOidcProvider();
    // The MCP server example's URL is stood in for by a real one on loopback with its tools.
    mcp = await startMcpServer(
      ['search_issues', 'get_issue'].map((name) => textTool({ name, description: name, inputSchema: { type: 'object' } }, () => '')),
    );
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    const document = (await t.http().get('/api/docs-json')).body as { paths: Record<string, Record<string, Operation>> };
    declared = new DeclaredAnswers(document as ConstructorParameters<typeof DeclaredAnswers>[0]);
    operations = new Map(
      Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as const),
      ),
    );
    // Offline, a webhook example's host does not resolve: the SSRF guard's check passes it here.
    jest.spyOn(t.app.get(OutboundHttp), 'check').mockResolvedValue();
  });
  afterAll(async () => {
    await t.close();
    await mcp.close();
    await oidc.close();
  });

  /**
   * Sends the document's example of `key` ("METHOD /path") to `path` (the path with its ids) as
   * `user`, and expects one of the operation's success statuses. `issued` fills in the fields
   * that only the service can issue (each must be in the example already).
   */
  async function send(key: string, path: string, user: TestUser | { token: string } | null, issued: Record<string, unknown> = {}) {
    const operation = operations.get(key);
    const example = operation?.requestBody?.content?.['application/json']?.example;
    expect({ key, example: example !== undefined }).toEqual({ key, example: true });
    for (const field of Object.keys(issued)) expect({ key, field, inExample: field in example! }).toEqual({ key, field, inExample: true });
    const method = key.split(' ')[0].toLowerCase() as 'post' | 'put' | 'patch';
    const request = t.http()[method](path);
    if (user) request.set(bearer(user));
    const res = await request.send({ ...example, ...issued });
    const success = Object.keys(operation!.responses)
      .filter((status) => status.startsWith('2'))
      .map(Number);
    const ok = success.includes(res.status);
    expect({ key, status: res.status, answer: ok ? 'success' : res.body }).toEqual({
      key,
      status: ok ? res.status : success[0],
      answer: 'success',
    });
    expect(declared.mismatch(key, res)).toBeNull();
    sent.add(key);
    return res.body as Record<string, unknown> & { id: string };
  }

  it('has one for every operation with a body, and each works as the docs show it', async () => {
    const org = await t.newOrg('enterprise');
    const { admin, member } = org;
    const operator = await t.addUser(org.id, 'member', { isOperator: true });

    const created = await send('POST /api/organizations', '/api/organizations', operator);
    await send('PATCH /api/organizations/{id}', `/api/organizations/${created.id}`, operator);
    await send('PATCH /api/subscription', '/api/subscription', admin);
    await send('PUT /api/license', '/api/license', operator, { key: process.env.LICENSE_KEY });

    // A user, who signs in and changes their password, then gets another role.
    const ada = await send('POST /api/users', '/api/users', admin);
    const tokens = await send('POST /api/auth/login', '/api/auth/login', null);
    await send('PATCH /api/auth/me/password', '/api/auth/me/password', { token: tokens.accessToken as string });
    await send('PATCH /api/users/{id}', `/api/users/${ada.id}`, admin);
    await send('POST /api/auth/refresh', '/api/auth/refresh', null, { refreshToken: admin.refreshToken });
    await send('POST /api/auth/logout', '/api/auth/logout', member, { refreshToken: member.refreshToken });

    await send('PUT /api/auth/saml', '/api/auth/saml', admin);
    const { code, record } = LoginCode.issue({ userId: org.viewer.id, organizationId: org.id, via: 'saml' });
    await t.run(() => t.app.get(SamlStore).saveCode(record));
    const viaSaml = await send('POST /api/auth/saml/exchange', '/api/auth/saml/exchange', null, { code });
    await send('POST /api/auth/saml/sp-keys/rotate', '/api/auth/saml/sp-keys/rotate', admin);
    await send(
      'POST /api/auth/saml/{org}/logout',
      `/api/auth/saml/${org.slug}/logout`,
      { token: viaSaml.accessToken as string },
      {
        refreshToken: viaSaml.refreshToken,
      },
    );

    // The OIDC example's provider is stood in for by a real one on loopback, with a client of its own.
    const client = await oidc.register([`${t.app.get(AppConfig).publicUrl}/api/auth/oidc/${org.slug}/callback`]);
    await send('PUT /api/auth/oidc', '/api/auth/oidc', admin, { issuer: oidc.issuer, ...client });
    const oidcCode = LoginCode.issue({ userId: org.viewer.id, organizationId: org.id, via: 'oidc' });
    await t.run(() => t.app.get(SamlStore).saveCode(oidcCode.record));
    await send('POST /api/auth/oidc/exchange', '/api/auth/oidc/exchange', null, { code: oidcCode.code });

    const account = await send('POST /api/service-accounts', '/api/service-accounts', admin);
    const accountKey = await send('POST /api/service-accounts/{id}/api-keys', `/api/service-accounts/${account.id}/api-keys`, admin);
    await send(
      'POST /api/service-accounts/{id}/api-keys/{keyId}/rotate',
      `/api/service-accounts/${account.id}/api-keys/${accountKey.id}/rotate`,
      admin,
    );
    await send('PATCH /api/service-accounts/{id}', `/api/service-accounts/${account.id}`, admin);
    const personalKey = await send('POST /api/auth/me/api-keys', '/api/auth/me/api-keys', admin);
    await send('POST /api/auth/me/api-keys/{keyId}/rotate', `/api/auth/me/api-keys/${personalKey.id}/rotate`, admin);
    await send('PUT /api/api-keys/policy', '/api/api-keys/policy', admin);
    await send('PUT /api/audit-events/settings', '/api/audit-events/settings', admin);

    await send('POST /api/plugins/{slug}/install', '/api/plugins/transform/install', admin);
    await send('POST /api/plugins/{slug}/install', '/api/plugins/http/install', admin);
    await send('PATCH /api/plugins/{slug}', '/api/plugins/http', admin);
    const server = await send('POST /api/mcp-servers', '/api/mcp-servers', admin, { url: mcp.url });
    expect(server.tools).toHaveLength(2);
    await send('PATCH /api/mcp-servers/{id}', `/api/mcp-servers/${server.id}`, admin);
    expect(await send('POST /api/mcp', '/api/mcp', admin)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { tools: [] } });

    const agent = await send('POST /api/agents', '/api/agents', admin);
    await send('PATCH /api/agents/{id}', `/api/agents/${agent.id}`, admin);
    const execution = await send('POST /api/agents/{id}/execute', `/api/agents/${agent.id}/execute`, admin);
    expect(execution).toMatchObject({ status: 'succeeded', output: 'HI' });

    const workflow = await send('POST /api/workflows', '/api/workflows', admin);
    const run = await send('POST /api/workflows/{id}/run', `/api/workflows/${workflow.id}/run`, admin);
    expect(run).toMatchObject({ status: 'succeeded', output: { message: 'hello ADA' } });
    await send('PUT /api/workflows/{id}', `/api/workflows/${workflow.id}`, admin);
    const retry = await send('POST /api/workflows/{id}/runs/{runId}/retry', `/api/workflows/${workflow.id}/runs/${run.id}/retry`, admin);
    expect(retry).toMatchObject({ status: 'succeeded', retryOf: run.id, output: { message: 'HELLO ADA!' } });
    // A run of another workflow waits for its approval (the example answers it) and for an event (the example sends it).
    const signOff = await t
      .http()
      .post('/api/workflows')
      .set(bearer(admin))
      .send({
        name: 'sign-off',
        steps: [
          { id: 'approve', wait: { for: 'approval', schema: { type: 'object', required: ['approved'] } } },
          { id: 'paid', needs: ['approve'], wait: { for: 'event', event: 'payment.settled', key: "'order-1001'" } },
        ],
      });
    const waiting = await t.http().post(`/api/workflows/${signOff.body.id}/run?wait=0`).set(bearer(admin)).send({});
    const stepOf = async (id: string) =>
      (
        (await t.http().get(`/api/workflows/${signOff.body.id}/runs/${waiting.body.id}`).set(bearer(admin))).body.steps as Array<{
          id: string;
          status: string;
        }>
      ).find((s) => s.id === id)!.status;
    await eventually(async () => (await stepOf('approve')) === 'waiting', { message: 'the approval to wait' });
    const answer = await send(
      'POST /api/workflows/{id}/runs/{runId}/steps/{stepId}/complete',
      `/api/workflows/${signOff.body.id}/runs/${waiting.body.id}/steps/approve/complete`,
      admin,
    );
    expect(answer).toMatchObject({ stepId: 'approve', output: { data: { approved: true } } });
    await eventually(async () => (await stepOf('paid')) === 'waiting', { message: 'the event to be waited for' });
    expect(await send('POST /api/events', '/api/events', admin)).toMatchObject({ answered: 1 });
    const schedule = await send('POST /api/workflows/{id}/schedules', `/api/workflows/${workflow.id}/schedules`, admin);
    await send('PATCH /api/workflows/{id}/schedules/{sid}', `/api/workflows/${workflow.id}/schedules/${schedule.id}`, admin);
    const trigger = await send('POST /api/workflows/{id}/triggers', `/api/workflows/${workflow.id}/triggers`, admin);
    await send('PATCH /api/workflows/{id}/triggers/{tid}', `/api/workflows/${workflow.id}/triggers/${trigger.id}`, admin);
    await send(
      'POST /api/workflows/{id}/triggers/{tid}/rotate-secret',
      `/api/workflows/${workflow.id}/triggers/${trigger.id}/rotate-secret`,
      admin,
    );

    const webhook = await send('POST /api/webhooks', '/api/webhooks', admin);
    await send('PATCH /api/webhooks/{id}', `/api/webhooks/${webhook.id}`, admin);
    await send('POST /api/webhooks/{id}/rotate-secret', `/api/webhooks/${webhook.id}/rotate-secret`, admin);
    await send('POST /api/webhooks/{id}/recover', `/api/webhooks/${webhook.id}/recover`, admin, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });

    // The reads whose answers are not plain JSON objects answer what the document declares too.
    const read = async (key: string, path: string) => {
      const res = await t.http().get(path).set(bearer(admin)).buffer(true);
      expect({ key, status: res.status }).toEqual({ key, status: 200 });
      expect(declared.mismatch(key, res)).toBeNull();
      return res;
    };
    expect((await read('GET /api/audit-events/verify', '/api/audit-events/verify')).body).toMatchObject({ valid: true, firstBreak: null });
    expect((await read('GET /api/audit-events/export', '/api/audit-events/export?format=jsonl')).text).toContain('"action"');
    expect((await read('GET /api/audit-events/export', '/api/audit-events/export?format=csv')).text).toMatch(/^id,/);
    expect((await read('GET /api/audit-events/export', `/api/audit-events/export?format=jsonl&targetId=${randomUUID()}`)).text).toBe('');

    // Every operation that takes a JSON body was sent, and the examples are exactly those operations'.
    const withBody = [...operations].filter(([, operation]) => operation.requestBody?.content?.['application/json']).map(([key]) => key);
    expect([...sent].sort()).toEqual(withBody.sort());
    expect(Object.keys(REQUEST_EXAMPLES).sort()).toEqual(withBody.sort());
  });
});
