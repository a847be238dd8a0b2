import { spawn } from 'node:child_process';
import { createServer, request as httpRequest, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DataSource } from 'typeorm';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';

jest.setTimeout(120_000);

const TEXT = { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string' } } };

/**
 * The platform as an MCP server: the SDK's own client, with an API key or a JWT as its bearer,
 * lists and calls the organization's exposed workflows and agents at POST /api/mcp; scopes,
 * long runs, progress, isolation, the 401 challenge, and the conformance suite's server
 * scenarios that apply to a tools-only server.
 */
describe('the platform as an MCP server (/api/mcp)', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let base: string;
  const ids: Record<string, string> = {};
  const clients: Client[] = [];

  beforeAll(async () => {
    t = await createTestApp({ env: { MCP_WAIT_SECONDS: '2' } });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    [org, other] = await Promise.all([t.newOrg('enterprise'), t.newOrg('enterprise')]);
    for (const o of [org, other]) await install(t, o, 'transform');
    ids.shout = await defineWorkflow(org, {
      name: 'Shout it',
      description: 'Shouts the text',
      inputSchema: TEXT,
      mcp: { expose: true },
      steps: [{ id: 'up', action: 'transform.jsonata', with: { expression: '{ "shout": $uppercase(text) }' } }],
      output: 'steps.up.output',
    });
    ids.hidden = await defineWorkflow(org, {
      name: 'Hidden',
      steps: [{ id: 'up', action: 'transform.jsonata', with: { expression: '1' } }],
    });
    ids.slow = await defineWorkflow(org, {
      name: 'Slow one',
      mcp: { expose: true, description: 'Takes a few seconds' },
      steps: [
        { id: 'nap', sleep: { seconds: 4 } },
        { id: 'after', needs: ['nap'], action: 'transform.jsonata', with: { expression: '"rested"' } },
      ],
      output: 'steps.after.output',
    });
    ids.broken = await defineWorkflow(org, {
      name: 'Broken',
      mcp: { expose: true },
      steps: [{ id: 'boom', action: 'transform.jsonata', with: { expression: '$error("no luck")' } }],
    });
    ids.agent = await registerAgent(t, org, {
      name: 'upper',
      kind: 'transform.jsonata',
      config: { expression: '$uppercase(text)' },
      inputSchema: TEXT,
      mcp: { expose: true, description: 'Upper-cases the text' },
    });
    ids.otherWorkflow = await defineWorkflow(other, {
      name: 'Theirs',
      mcp: { expose: true },
      steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '"theirs"' } }],
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t.close();
  });

  async function defineWorkflow(as: TestOrg, body: Record<string, unknown>): Promise<string> {
    const res = await t.http().post('/api/workflows').set(bearer(as.admin)).send(body);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  }

  async function apiKey(as: TestUser, scopes: string[]): Promise<string> {
    const res = await t
      .http()
      .post('/api/auth/me/api-keys')
      .set(bearer(as))
      .send({ name: `mcp ${scopes.join(' ')}`, scopes });
    if (res.status !== 201) throw new Error(`key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.key as string;
  }

  /** The SDK's client, connected to /api/mcp with `token` as its bearer. */
  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;

  it('lists the exposed workflows and agents of the organization, with their input schemas', async () => {
    const client = await connect(await apiKey(org.member, ['workflows:read', 'workflows:run', 'agents:read', 'agents:execute']));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['agent_upper', 'workflow_broken', 'workflow_shout_it', 'workflow_slow_one']);
    expect(tools.find((tool) => tool.name === 'workflow_shout_it')).toMatchObject({ description: 'Shouts the text', inputSchema: TEXT });
    expect(tools.find((tool) => tool.name === 'workflow_slow_one')).toMatchObject({
      description: 'Takes a few seconds',
      inputSchema: { type: 'object' },
    });
    expect(tools.find((tool) => tool.name === 'agent_upper')).toMatchObject({ description: 'Upper-cases the text', inputSchema: TEXT });
  });

  it('runs a workflow and executes an agent with an API key; the output is structured content; the run says mcp started it', async () => {
    const key = await apiKey(org.member, ['workflows:read', 'workflows:run', 'agents:read', 'agents:execute']);
    const client = await connect(key);
    const ran = await call(client, 'workflow_shout_it', { text: 'hello' });
    expect(ran).toMatchObject({ structuredContent: { shout: 'HELLO' }, content: [{ type: 'text', text: '{"shout":"HELLO"}' }] });
    expect(ran.isError).toBeFalsy();
    const runId = (ran._meta as { runId: string }).runId;
    const run = await t.http().get(`/api/workflows/${ids.shout}/runs/${runId}`).set(bearer(org.viewer));
    const keys = await t.http().get('/api/auth/me/api-keys').set(bearer(org.member));
    const keyId = (keys.body.data as Array<{ id: string; prefix: string }>).find((k) => key.startsWith(k.prefix))!.id;
    expect(run.body).toMatchObject({ status: 'succeeded', triggeredBy: { type: 'mcp', keyId } });

    const executed = await call(client, 'agent_upper', { text: 'quiet' });
    expect(executed).toMatchObject({ structuredContent: { result: 'QUIET' }, content: [{ type: 'text', text: '"QUIET"' }] });
    const executionId = (executed._meta as { executionId: string }).executionId;
    const execution = await t.http().get(`/api/agents/${ids.agent}/history/${executionId}`).set(bearer(org.viewer));
    expect(execution.body).toMatchObject({ status: 'succeeded', triggeredBy: { type: 'mcp', keyId } });
  });

  it('takes a signed-in user’s JWT as the bearer too', async () => {
    const client = await connect(org.member.token);
    expect(await call(client, 'workflow_shout_it', { text: 'jwt' })).toMatchObject({ structuredContent: { shout: 'JWT' } });
  });

  it('answers invalid arguments and a failed run as tool errors naming the problem', async () => {
    const client = await connect(org.member.token);
    const invalid = await call(client, 'workflow_shout_it', { text: 5 });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toContain('VALIDATION_FAILED');
    const failed = await call(client, 'workflow_broken');
    expect(failed.isError).toBe(true);
    expect(JSON.stringify(failed.content)).toContain('no luck');
    await expect(client.callTool({ name: 'workflow_hidden', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it('answers a run that outlasts the wait with its id and status, and sends progress when asked', async () => {
    const client = await connect(org.member.token);
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'workflow_slow_one', arguments: {} }, CallToolResultSchema, {
      onprogress: (p) => progress.push(p.progress),
      timeout: 30_000,
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ runId: expect.any(String), status: expect.stringMatching(/^(queued|running|waiting)$/) });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    const runId = (result.structuredContent as { runId: string }).runId;
    const run = await t.http().get(`/api/workflows/${ids.slow}/runs/${runId}`).set(bearer(org.viewer));
    expect(run.status).toBe(200);
  });

  it('narrows by scope: tools/list shows a kind with its read scope, tools/call needs its run scope', async () => {
    const readOnly = await connect(await apiKey(org.member, ['workflows:read']));
    expect((await readOnly.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'workflow_broken',
      'workflow_shout_it',
      'workflow_slow_one',
    ]);
    const refused = await call(readOnly, 'workflow_shout_it', { text: 'x' });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('workflows:run');

    const agentsOnly = await connect(await apiKey(org.member, ['agents:read', 'agents:execute']));
    expect((await agentsOnly.listTools()).tools.map((tool) => tool.name)).toEqual(['agent_upper']);
    expect(await call(agentsOnly, 'agent_upper', { text: 'a' })).toMatchObject({ structuredContent: { result: 'A' } });

    const viewer = await connect(org.viewer.token);
    expect((await call(viewer, 'workflow_shout_it', { text: 'x' })).isError).toBe(true);
  });

  it("keeps each organization's tools its own", async () => {
    const theirs = await connect(await apiKey(other.admin, ['workflows:read', 'workflows:run', 'agents:read', 'agents:execute']));
    expect((await theirs.listTools()).tools.map((tool) => tool.name)).toEqual(['workflow_theirs']);
    await expect(theirs.callTool({ name: 'workflow_shout_it', arguments: { text: 'x' } })).rejects.toThrow(/Unknown tool/);
    const ours = await connect(org.member.token);
    await expect(ours.callTool({ name: 'workflow_theirs', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it('answers 401 with the challenge the MCP authorization spec names, and serves the resource metadata', async () => {
    const res = await t.http().post('/api/mcp').send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expectError(res, 401, 'UNAUTHORIZED');
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/,
    );
    const metadata = await t.http().get('/.well-known/oauth-protected-resource');
    expect(metadata.status).toBe(200);
    expect(metadata.body).toMatchObject({ resource: expect.stringMatching(/\/api\/mcp$/), bearer_methods_supported: ['header'] });
    expectError(await t.http().get('/api/mcp').set(bearer(org.member)), 405, 'METHOD_NOT_ALLOWED');
    // Not JSON-RPC: refused in the envelope. A plain JSON client (no event streams) gets JSON.
    expectError(await t.http().post('/api/mcp').set(bearer(org.member)).send({ hello: 1 }), 400, 'VALIDATION_FAILED', 'body');
    const plain = await t
      .http()
      .post('/api/mcp')
      .set(bearer(org.member))
      .set('Accept', 'application/json')
      .send({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^application\/json/);
    expect(plain.body.result.tools.map((tool: { name: string }) => tool.name)).toContain('workflow_shout_it');
  });

  it('refuses a JSON-RPC batch with a JSON-RPC error and 400, and starts none of its calls', async () => {
    const db = t.app.get(DataSource);
    const count = async (table: string, column: string, id: string) =>
      Number((await db.query(`SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`, [id]))[0].n);
    const before = {
      runs: await count('workflow_runs', 'workflow_id', ids.shout),
      executions: await count('agent_executions', 'agent_id', ids.agent),
    };
    const calls = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i + 1,
      method: 'tools/call',
      params:
        i % 2 ? { name: 'workflow_shout_it', arguments: { text: 'batched' } } : { name: 'agent_upper', arguments: { text: 'batched' } },
    }));

    const res = await t.http().post('/api/mcp').set(bearer(org.member)).set('Accept', 'application/json, text/event-stream').send(calls);

    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringContaining('one JSON-RPC message per request') as unknown },
    });
    expect({
      runs: await count('workflow_runs', 'workflow_id', ids.shout),
      executions: await count('agent_executions', 'agent_id', ids.agent),
    }).toEqual(before);
    // A batch of one is a batch too.
    const one = await t.http().post('/api/mcp').set(bearer(org.member)).send([calls[1]]);
    expect(one.status).toBe(400);
    expect(one.body.error.code).toBe(-32600);
  });

  it('checks the mcp field at save', async () => {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'bad mcp', mcp: { expose: 'yes' }, steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '1' } }] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error.details)).toContain('mcp.expose');
    const agent = await t
      .http()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({ name: 'bad-mcp', kind: 'transform.jsonata', config: { expression: '1' }, mcp: { expose: true, extra: 1 } });
    expect(agent.status).toBe(400);
  });

  describe('the conformance suite (@modelcontextprotocol/conformance)', () => {
    /** The server scenarios that apply to a tools-only server; the others are listed in the README. */
    const SCENARIOS = ['server-initialize', 'ping', 'tools-list'];
    let proxy: Server;
    let proxyUrl: string;

    beforeAll(async () => {
      // The suite sends no credentials: a loopback proxy adds an API key's bearer to each request.
      const key = await apiKey(org.member, ['workflows:read', 'workflows:run', 'agents:read', 'agents:execute']);
      const target = new URL(base);
      proxy = createServer((req, res) => {
        const upstream = httpRequest(
          {
            host: target.hostname,
            port: target.port,
            path: req.url,
            method: req.method,
            headers: { ...req.headers, authorization: `Bearer ${key}` },
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', () => res.writeHead(502).end());
        req.pipe(upstream);
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api/mcp`;
    });
    afterAll(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

    it.each(SCENARIOS)('passes %s', async (scenario) => {
      const cli = require.resolve('@modelcontextprotocol/conformance/dist/index.js');
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(process.execPath, [cli, 'server', '--url', proxyUrl, '--scenario', scenario], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        child.stdout.on('data', (c: Buffer) => (text += c.toString()));
        child.stderr.on('data', (c: Buffer) => (text += c.toString()));
        child.on('close', (exit) => resolve({ code: exit, output: text }));
      });
      expect({ scenario, code, output }).toEqual({ scenario, code: 0, output: expect.not.stringMatching(/FAIL|✗/) as unknown });
    });
  });
});
