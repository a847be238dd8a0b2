import { closedPortUrl, LoopbackServer, sendJson, startLoopbackServer } from '../../../../../test/support/loopback-server';
import { failureOf, loopbackClient, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { ExecuteRequest } from '../../domain/plugin';
import { createHttpPlugin } from './http.plugin';

const agent = createHttpPlugin(loopbackClient()).agentKinds.agent;

describe('http.agent', () => {
  let server: LoopbackServer;
  let reply: Parameters<typeof startLoopbackServer>[0];

  beforeAll(async () => {
    server = await startLoopbackServer((req, res) => reply(req, res));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  function call(overrides: Partial<ExecuteRequest> = {}, config: Record<string, unknown> = {}) {
    return agent.execute(
      makeExecuteRequest({ config: { url: `${server.url}/agent`, ...config }, input: { question: 'why?' }, ...overrides }),
    );
  }

  it('POSTs the input as JSON with the Idempotency-Key and takes the JSON reply as output', async () => {
    reply = (req, res) => sendJson(res, 200, { answer: 42, echoed: JSON.parse(req.body) as unknown });
    const pluginConfig = {
      defaultHeaders: { 'X-Team': 'blue', 'X-Trace': 'default' },
      authorization: 'Bearer install-token',
      origins: [server.url],
    };

    const output = await call({ pluginConfig, idempotencyKey: 'exec-7:agent' }, { headers: { 'x-trace': 'agent' } });

    expect(output).toEqual({ answer: 42, echoed: { question: 'why?' } });
    const [received] = server.requests;
    expect(received.method).toBe('POST');
    expect(received.url).toBe('/agent');
    expect(received.headers).toMatchObject({
      'idempotency-key': 'exec-7:agent',
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: 'Bearer install-token',
      'x-team': 'blue',
      'x-trace': 'agent',
    });
  });

  it("withholds the installation's headers from an origin the installation does not list", async () => {
    reply = (_req, res) => sendJson(res, 200, {});
    const pluginConfig = {
      defaultHeaders: { 'X-Team': 'blue' },
      authorization: 'Bearer install-token',
      origins: ['https://api.example.com'],
    };
    await call({ pluginConfig }, { headers: { 'x-own': 'agent' } });
    const [received] = server.requests;
    expect(received.headers['x-own']).toBe('agent');
    expect(received.headers.authorization).toBeUndefined();
    expect(received.headers['x-team']).toBeUndefined();
  });

  it('reports a non-2xx answer as UPSTREAM_ERROR', async () => {
    reply = (_req, res) => sendJson(res, 503, { error: 'busy' });
    const error = await failureOf(call(), 'UPSTREAM_ERROR');
    expect(error.message).toBe('Agent answered 503');
  });

  it('reports a reply that is not JSON as INVALID_OUTPUT', async () => {
    reply = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer": ');
    await failureOf(call(), 'INVALID_OUTPUT');
  });

  it('reports an empty 2xx reply as INVALID_OUTPUT', async () => {
    reply = (_req, res) => res.writeHead(204).end();
    await failureOf(call(), 'INVALID_OUTPUT');
  });

  it('refuses a reply over 1 MiB as UPSTREAM_ERROR', async () => {
    reply = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ big: 'x'.repeat(1024 * 1024) }));
    await failureOf(call(), 'UPSTREAM_ERROR');
  });

  it('gives up after its own timeoutMs when the agent never answers', async () => {
    reply = () => undefined;
    const started = Date.now();
    await failureOf(call({}, { timeoutMs: 200 }), 'AGENT_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('reports CANCELED when the signal aborts while waiting', async () => {
    reply = () => undefined;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await failureOf(call({ signal: controller.signal }), 'CANCELED');
  });

  it('reports an address the SSRF guard refuses as OUTBOUND_REFUSED, without sending anything', async () => {
    await failureOf(call({}, { url: 'http://127.0.0.2:9/agent' }), 'OUTBOUND_REFUSED');
    await failureOf(call({}, { url: 'file:///etc/passwd' }), 'OUTBOUND_REFUSED');
    expect(server.requests).toHaveLength(0);
  });

  it('reports a connection failure as UPSTREAM_ERROR', async () => {
    await failureOf(call({}, { url: `${await closedPortUrl()}/agent` }), 'UPSTREAM_ERROR');
  });
});
