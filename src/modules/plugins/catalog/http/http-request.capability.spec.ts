import { LoopbackServer, sendJson, startLoopbackServer } from '../../../../../test/support/loopback-server';
import { failureOf, loopbackClient, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { createHttpPlugin } from './http.plugin';

const request = createHttpPlugin(loopbackClient()).actions.request;

describe('http.request', () => {
  let server: LoopbackServer;
  let reply: Parameters<typeof startLoopbackServer>[0];

  beforeAll(async () => {
    server = await startLoopbackServer((req, res) => reply(req, res));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
    reply = (req, res) => sendJson(res, 200, { method: req.method, path: req.url });
  });

  function call(config: Record<string, unknown>, input: unknown = { from: 'input' }, pluginConfig = {}) {
    return request.execute(makeExecuteRequest({ config: { ...config, url: `${server.url}${String(config.url)}` }, input, pluginConfig }));
  }

  it('GETs without a body and parses a JSON response', async () => {
    const output = await call({ method: 'GET', url: '/items?page=2', headers: { 'X-Api': 'v2' } }, undefined, {
      authorization: 'Token t',
      origins: [server.url],
    });

    expect(output).toEqual({
      status: 200,
      headers: expect.objectContaining({ 'content-type': 'application/json' }) as unknown,
      body: { method: 'GET', path: '/items?page=2' },
    });
    const [received] = server.requests;
    expect(received.body).toBe('');
    expect(received.headers).toMatchObject({ 'x-api': 'v2', authorization: 'Token t' });
    expect(received.headers['content-type']).toBeUndefined();
  });

  it('POSTs the input as JSON when the config has no body', async () => {
    await call({ method: 'POST', url: '/items' });
    expect(server.requests[0]).toMatchObject({ method: 'POST', body: '{"from":"input"}', headers: { 'content-type': 'application/json' } });
  });

  it("sends the config's body instead of the input when it has one", async () => {
    await call({ method: 'PUT', url: '/items/1', body: { from: 'config' } });
    expect(server.requests[0]).toMatchObject({ method: 'PUT', body: '{"from":"config"}' });
  });

  it('gives a non-JSON response body as text', async () => {
    reply = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
    await expect(call({ method: 'GET', url: '/' })).resolves.toMatchObject({ status: 200, body: 'hello' });
  });

  it('gives null for an empty body (HEAD)', async () => {
    await expect(call({ method: 'HEAD', url: '/' })).resolves.toMatchObject({ status: 200, body: null });
  });

  it('fails on a non-2xx status by default', async () => {
    reply = (_req, res) => sendJson(res, 404, { error: 'nope' });
    const error = await failureOf(call({ method: 'DELETE', url: '/items/9' }), 'UPSTREAM_ERROR');
    expect(error.message).toBe('Request answered 404');
  });

  it('returns a non-2xx status as output when failOnError is false', async () => {
    reply = (_req, res) => sendJson(res, 404, { error: 'nope' });
    await expect(call({ method: 'PATCH', url: '/items/9', failOnError: false })).resolves.toMatchObject({
      status: 404,
      body: { error: 'nope' },
    });
  });
});
