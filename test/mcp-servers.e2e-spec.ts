import { ChildProcess, spawn } from 'node:child_process';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { DataSource } from 'typeorm';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { answer, FakeLlm, sentBody, startFakeLlm, toolCalls } from './support/fake-llm';
import { closedPortUrl } from './support/loopback-server';
import { LoopbackMcpServer, startMcpServer, textTool } from './support/mcp-server';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

jest.setTimeout(60_000);

const SECRET = 'Bearer mcp-secret-7f3a9c';
const TEXT: Tool['inputSchema'] = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: { text: { type: 'string', maxLength: 100 } },
};
const PAIR: Tool['inputSchema'] = { type: 'object', required: ['a', 'b'], properties: { a: { type: 'number' }, b: { type: 'number' } } };

interface StepBody {
  id: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
}
interface RunBody {
  id: string;
  status: string;
  output: unknown;
  steps: StepBody[];
}

/**
 * Remote MCP servers as plugins: an admin connects one (a real SDK server on 127.0.0.1), its
 * tools become actions `mcp.<server>.<tool>` for workflow steps and llm.agent tools, and the
 * SSRF guard, secrets and tenant isolation hold as for any plugin.
 */
describe('MCP servers as plugins', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let mcp: LoopbackMcpServer;
  let llm: FakeLlm;
  let serverId: string;
  /** Every response body the tests read, to show the header's value never comes back. */
  const seen: unknown[] = [];

  beforeAll(async () => {
    mcp = await startMcpServer([
      textTool({ name: 'echo', description: 'Says the text back', inputSchema: TEXT }, (args) => `echo: ${String(args.text)}`),
      {
        tool: {
          name: 'add',
          description: 'Adds two numbers',
          inputSchema: PAIR,
          outputSchema: { type: 'object', properties: { sum: { type: 'number' } } },
        },
        call: async (args) => {
          const sum = Number(args.a) + Number(args.b);
          return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
        },
      },
      {
        tool: { name: 'slow', description: 'Takes its time', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } } },
        call: (args, signal) =>
          new Promise((resolve) => {
            const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: 'done' }] }), Number(args.ms ?? 5000));
            signal.addEventListener('abort', () => clearTimeout(timer));
          }),
      },
      textTool({ name: 'fail', description: 'Always fails', inputSchema: { type: 'object' } }, () => 'unused'),
    ]);
    mcp.tools.set('fail', {
      tool: mcp.tools.get('fail')!.tool,
      call: async () => ({ isError: true, content: [{ type: 'text', text: 'the disk is full' }] }),
    });
    llm = await startFakeLlm();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [org, other] = await Promise.all([t.newOrg('enterprise'), t.newOrg('enterprise')]);
    for (const o of [org, other]) await install(t, o, 'transform');
    await install(t, org, 'llm', { baseUrl: llm.baseUrl, defaultModel: 'test-model' });
    const res = await connect({ name: 'tools', url: mcp.url, headers: { Authorization: SECRET } });
    expect(res.status).toBe(201);
    serverId = res.body.id as string;
  });
  afterAll(async () => {
    await t.close();
    await mcp.close();
    await llm.close();
    expect(JSON.stringify(seen)).not.toContain('mcp-secret-7f3a9c');
  });

  const read = <T extends { body: unknown }>(res: T): T => {
    seen.push(res.body);
    return res;
  };
  const connect = async (body: Record<string, unknown>, as: TestOrg = org) =>
    read(await t.http().post('/api/mcp-servers').set(bearer(as.admin)).send(body));
  const defineWorkflow = async (definition: Record<string, unknown>, as: TestOrg = org) =>
    read(
      await t
        .http()
        .post('/api/workflows')
        .set(bearer(as.admin))
        .send({ name: `wf ${Math.random()}`, ...definition }),
    );
  const run = async (definition: Record<string, unknown>, input: unknown = {}): Promise<RunBody> => {
    const defined = await defineWorkflow(definition);
    if (defined.status !== 201) throw new Error(`define: ${defined.status} ${JSON.stringify(defined.body)}`);
    const started = await t.http().post(`/api/workflows/${defined.body.id}/run?wait=20`).set(bearer(org.member)).send({ input });
    expect(started.status).toBe(200);
    return started.body as RunBody;
  };

  describe('connecting', () => {
    it('reads the tools with tools/list, stores and shows them; header values are never returned', async () => {
      const res = read(await t.http().get(`/api/mcp-servers/${serverId}`).set(bearer(org.viewer)));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: serverId,
        name: 'tools',
        slug: 'mcp.tools',
        url: mcp.url,
        transport: 'streamable-http',
        headers: { Authorization: '********' },
        allowedTools: null,
        skippedTools: [],
      });
      expect(res.body.tools).toEqual(
        expect.arrayContaining([
          { name: 'echo', action: 'mcp.tools.echo', description: 'Says the text back', inputSchema: TEXT },
          expect.objectContaining({ name: 'add', action: 'mcp.tools.add', inputSchema: PAIR }),
        ]),
      );
      expect(res.body.tools).toHaveLength(4);
      // The header went to the server, sealed at rest and never shown.
      expect(mcp.requests.some((r) => r.headers.authorization === SECRET)).toBe(true);
      const list = read(await t.http().get('/api/mcp-servers').set(bearer(org.viewer)));
      expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([serverId]);
      const row = await t.app.get(DataSource).query(`SELECT config::text AS config FROM plugin_installations WHERE id = $1`, [serverId]);
      expect(row[0].config).not.toContain('mcp-secret');
    });

    it('shows the server among the installed plugins, and the catalog explains how to connect one', async () => {
      const plugins = read(await t.http().get('/api/plugins').set(bearer(org.viewer)));
      const entry = plugins.body.data.find((p: { slug: string }) => p.slug === 'mcp.tools');
      expect(entry).toMatchObject({ installationId: serverId, config: { url: mcp.url, headers: '********' } });
      expect(entry.actions.map((a: { kind: string }) => a.kind)).toEqual(
        expect.arrayContaining(['mcp.tools.echo', 'mcp.tools.add', 'mcp.tools.slow', 'mcp.tools.fail']),
      );
      const one = read(await t.http().get('/api/plugins/mcp.tools').set(bearer(org.viewer)));
      expect(one.status).toBe(200);
      expect(one.body.installationId).toBe(serverId);
      const catalog = await t.http().get('/api/plugin-catalog').set(bearer(org.viewer));
      const mcpEntry = catalog.body.data.find((p: { slug: string }) => p.slug === 'mcp');
      expect(mcpEntry).toMatchObject({ installed: true, actions: [] });
      expect(mcpEntry.description).toContain('POST /api/mcp-servers');
      expectError(await t.http().post('/api/plugins/mcp/install').set(bearer(org.admin)).send({}), 400, 'VALIDATION_FAILED');
    });

    it('refuses bad input, a taken name, members, and a URL the SSRF guard blocks (or that redirects to one)', async () => {
      expectError(await connect({ name: 'Bad Name', url: mcp.url }), 400, 'VALIDATION_FAILED', 'name');
      expectError(await connect({ name: 'x', url: 'ftp://example.com' }), 400, 'VALIDATION_FAILED', 'url');
      expectError(await connect({ name: 'x', url: mcp.url, headers: { 'bad header': 'v' } }), 400, 'VALIDATION_FAILED');
      expectError(await connect({ name: 'tools', url: mcp.url }), 409, 'MCP_SERVER_NAME_TAKEN');
      expectError(await t.http().post('/api/mcp-servers').set(bearer(org.member)).send({ name: 'm', url: mcp.url }), 403, 'FORBIDDEN');
      expectError(await connect({ name: 'metadata', url: 'http://169.254.169.254/mcp' }), 400, 'VALIDATION_FAILED', 'url');
      expectError(await connect({ name: 'private', url: 'http://10.1.2.3/mcp' }), 400, 'VALIDATION_FAILED', 'url');
      mcp.redirects.set('/moved', 'http://169.254.169.254/mcp');
      const redirected = await connect({ name: 'moved', url: `${mcp.origin}/moved` });
      expectError(redirected, 502, 'MCP_SERVER_UNREACHABLE');
      expectError(await connect({ name: 'down', url: `${await closedPortUrl()}/mcp` }), 502, 'MCP_SERVER_UNREACHABLE');
      const names = read(await t.http().get('/api/mcp-servers').set(bearer(org.viewer))).body.data.map((s: { name: string }) => s.name);
      expect(names).toEqual(['tools']);
    });

    it('refreshes after the server changes; allowedTools narrows what is offered; a new URL needs its headers again', async () => {
      mcp.tools.set(
        'shout',
        textTool({ name: 'shout', description: 'Shouts', inputSchema: TEXT }, (a) => String(a.text).toUpperCase()),
      );
      mcp.tools.set(
        'bad name!',
        textTool({ name: 'bad name!', description: '', inputSchema: { type: 'object' } }, () => ''),
      );
      try {
        const refreshed = read(await t.http().post(`/api/mcp-servers/${serverId}/refresh`).set(bearer(org.admin)));
        expect(refreshed.status).toBe(200);
        expect(refreshed.body.tools.map((x: { name: string }) => x.name)).toContain('shout');
        expect(refreshed.body.skippedTools).toEqual([{ name: 'bad name!', reason: expect.stringContaining('name') }]);

        const narrowed = read(
          await t
            .http()
            .patch(`/api/mcp-servers/${serverId}`)
            .set(bearer(org.admin))
            .send({ allowedTools: ['echo', 'gone'] }),
        );
        expect(narrowed.status).toBe(200);
        expect(narrowed.body.tools.map((x: { name: string }) => x.name)).toEqual(['echo']);
        expect(narrowed.body.skippedTools).toEqual([{ name: 'gone', reason: 'the server does not list it' }]);
        expect(narrowed.body.headers).toEqual({ Authorization: '********' });

        const moved = await t
          .http()
          .patch(`/api/mcp-servers/${serverId}`)
          .set(bearer(org.admin))
          .send({ url: `${mcp.url}?v=2` });
        expectError(moved, 400, 'VALIDATION_FAILED', 'config.headers');
      } finally {
        mcp.tools.delete('shout');
        mcp.tools.delete('bad name!');
        const restored = await t.http().patch(`/api/mcp-servers/${serverId}`).set(bearer(org.admin)).send({ allowedTools: null });
        expect(restored.body.tools).toHaveLength(4);
      }
    });
  });

  describe('tools as workflow steps', () => {
    it('calls a tool with the step input as arguments; `with` gives fixed ones; structured content is the output', async () => {
      const body = await run(
        {
          steps: [
            { id: 'echo', action: 'mcp.tools.echo', input: '{ "text": input.word }' },
            { id: 'sum', action: 'mcp.tools.add', with: { b: 2 }, input: '{ "a": input.n }', needs: ['echo'] },
          ],
          output: '{ "said": steps.echo.output.text, "sum": steps.sum.output.structuredContent.sum }',
        },
        { word: 'hi', n: 40 },
      );
      expect(body).toMatchObject({ status: 'succeeded', output: { said: 'echo: hi', sum: 42 } });
      expect(body.steps.find((s) => s.id === 'sum')!.output).toEqual({
        content: [{ type: 'text', text: '42' }],
        structuredContent: { sum: 42 },
        text: '42',
      });
      const call = mcp.calls.filter((c) => c.name === 'add').at(-1)!;
      expect(call.arguments).toEqual({ a: 40, b: 2 });
      expect(call.headers.authorization).toBe(SECRET);
    });

    it('checks steps at save against the stored tools and their schemas', async () => {
      const unknown = await defineWorkflow({ steps: [{ id: 'a', action: 'mcp.tools.nope' }] });
      expectError(unknown, 400, 'WORKFLOW_INVALID', 'steps[0].action');
      const badWith = await defineWorkflow({ steps: [{ id: 'a', action: 'mcp.tools.echo', with: { text: 7 } }] });
      expectError(badWith, 400, 'WORKFLOW_INVALID', 'steps[0].with.text');
      const notConnected = await defineWorkflow({ steps: [{ id: 'a', action: 'mcp.elsewhere.echo' }] });
      expectError(notConnected, 400, 'WORKFLOW_INVALID', 'steps[0].action');
      expect(JSON.stringify(notConnected.body)).toContain("plugin 'mcp.elsewhere' is not installed");
    });

    it('fails the step with the tool error, invalid arguments, a timeout, or a server that is down (retryable)', async () => {
      const failed = await run({ steps: [{ id: 'f', action: 'mcp.tools.fail' }] });
      expect(failed.status).toBe('failed');
      expect(failed.steps[0].error).toEqual({ code: 'TOOL_ERROR', message: "Tool 'fail' failed: the disk is full" });

      const invalid = await run({ steps: [{ id: 'e', action: 'mcp.tools.echo', input: '{ "text": 5 }' }] });
      expect(invalid.steps[0].error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('arguments.text') });

      const slow = await run({ steps: [{ id: 's', action: 'mcp.tools.slow', input: '{ "ms": 5000 }', timeoutMs: 1000 }] });
      expect(slow.steps[0].error).toMatchObject({ code: 'AGENT_TIMEOUT' });

      const down = await connect({ name: 'flaky', url: mcp.url });
      expect(down.status).toBe(201);
      const dead = await startMcpServer([]);
      await dead.close();
      await t.app
        .get(DataSource)
        .query(`UPDATE plugin_installations SET config = jsonb_set(config, '{url}', to_jsonb($1::text)) WHERE id = $2`, [
          dead.url,
          down.body.id,
        ]);
      const unreachable = await run({
        steps: [{ id: 'e', action: 'mcp.flaky.echo', input: '{ "text": "x" }', retry: { maxAttempts: 1 } }],
      });
      expect(unreachable.steps[0].error).toMatchObject({ code: 'UPSTREAM_ERROR', message: expect.stringContaining('MCP server') });
    });

    it('speaks the older HTTP+SSE transport to a server that only has it', async () => {
      const legacy = await connect({ name: 'legacy', url: mcp.sseUrl, transport: 'sse' });
      expect(legacy.status).toBe(201);
      expect(legacy.body).toMatchObject({ transport: 'sse', tools: expect.arrayContaining([expect.objectContaining({ name: 'echo' })]) });
      const body = await run({ steps: [{ id: 'e', action: 'mcp.legacy.add', input: '{ "a": 1, "b": 2 }' }] });
      expect(body).toMatchObject({ status: 'succeeded', steps: [{ output: { structuredContent: { sum: 3 } } }] });
    });

    it('opens a new session when the server forgot the old one', async () => {
      mcp.forgetSessions();
      const body = await run({ steps: [{ id: 'e', action: 'mcp.tools.echo', input: '{ "text": "again" }' }] });
      expect(body).toMatchObject({ status: 'succeeded', steps: [{ output: { text: 'echo: again' } }] });
    });
  });


  it("records a server's connection, change and removal in the audit log, its header masked", async () => {
    const created = await connect({ name: 'audited', url: mcp.url, headers: { Authorization: SECRET } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const changed = await t.http().patch(`/api/mcp-servers/${id}`).set(bearer(org.admin)).send({ allowedTools: ['echo'] });
    expect(changed.status).toBe(200);
    expect((await t.http().delete(`/api/mcp-servers/${id}`).set(bearer(org.admin))).status).toBe(204);

    const audit = read(await t.http().get(`/api/audit-events?targetId=${id}`).set(bearer(org.admin)));
    const [deleted, updated, connected] = audit.body.data;
    expect(connected).toMatchObject({
      action: 'mcp_server.created',
      actor: { type: 'user', id: org.admin.id },
      target: { type: 'mcp_server', id, name: 'audited' },
      changes: { after: { url: mcp.url } },
    });
    expect(updated).toMatchObject({ action: 'mcp_server.updated', changes: { after: { allowedTools: ['echo'] } } });
    expect(deleted).toMatchObject({ action: 'mcp_server.deleted', target: { type: 'mcp_server', id, name: 'audited' } });
  });
  it('serves its tools to llm.agent: the model calls one and reads its output', async () => {
    const agent = await registerAgent(t, org, {
      name: 'mcp-user',
      kind: 'llm.agent',
      config: { systemPrompt: 'Use the tools.', tools: [{ action: 'mcp.tools.add', with: { b: 1 } }] },
      maxAttempts: 1,
    });
    const from = llm.requests.length;
    llm.script(toolCalls([{ id: 'call_add', name: 'mcp_tools_add', arguments: { a: 41 } }]), answer('It is 42'));
    const res = await t.http().post(`/api/agents/${agent}/execute?wait=15`).set(bearer(org.member)).send({ input: {} });
    expect(res.body).toMatchObject({ status: 'succeeded', output: { text: 'It is 42', toolCalls: 1 } });
    const [first, second] = llm.requests.slice(from).map(sentBody);
    expect(first.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'mcp_tools_add',
          description: 'Adds two numbers',
          parameters: { type: 'object', required: ['a'], properties: { a: { type: 'number' } } },
        },
      },
    ]);
    const toolMessage = second.messages.find((m) => m.role === 'tool') as { content: string };
    expect(JSON.parse(toolMessage.content)).toMatchObject({ structuredContent: { sum: 42 } });
    expect(mcp.calls.filter((c) => c.name === 'add').at(-1)!.arguments).toEqual({ a: 41, b: 1 });

    const unknownTool = await t
      .http()
      .post('/api/agents')
      .set(bearer(org.admin))
      .send({ name: 'bad-tool', kind: 'llm.agent', config: { systemPrompt: 's', tools: [{ action: 'mcp.tools.nope' }] } });
    expectError(unknownTool, 400, 'VALIDATION_FAILED', 'config.tools.0.action');
  });

  it("keeps each organization's servers its own", async () => {
    expectError(await t.http().get(`/api/mcp-servers/${serverId}`).set(bearer(other.admin)), 404, 'MCP_SERVER_NOT_FOUND');
    expectError(await t.http().post(`/api/mcp-servers/${serverId}/refresh`).set(bearer(other.admin)), 404, 'MCP_SERVER_NOT_FOUND');
    expectError(await t.http().delete(`/api/mcp-servers/${serverId}`).set(bearer(other.admin)), 404, 'MCP_SERVER_NOT_FOUND');
    expect((await t.http().get('/api/mcp-servers').set(bearer(other.admin))).body.data).toEqual([]);
    expectError(await t.http().get('/api/plugins/mcp.tools').set(bearer(other.admin)), 404, 'PLUGIN_NOT_FOUND');
    const borrowed = await defineWorkflow({ steps: [{ id: 'a', action: 'mcp.tools.echo' }] }, other);
    expectError(borrowed, 400, 'WORKFLOW_INVALID', 'steps[0].action');
    // The same name is free in another organization.
    const own = await connect({ name: 'tools', url: mcp.url, allowedTools: ['echo'] }, other);
    expect(own.status).toBe(201);
    expect(own.body.headers).toEqual({});
    // Calls of the two organizations never share a session, though URL and server are the same.
    const theirs = await defineWorkflow({ steps: [{ id: 'e', action: 'mcp.tools.echo', input: '{ "text": "theirs" }' }] }, other);
    const ran = await t.http().post(`/api/workflows/${theirs.body.id}/run?wait=20`).set(bearer(other.member)).send({ input: {} });
    expect(ran.body).toMatchObject({ status: 'succeeded', output: { e: { text: 'echo: theirs' } } });
    const sessionOf = (text: string) => mcp.calls.find((c) => c.arguments.text === text)?.headers['mcp-session-id'];
    await run({ steps: [{ id: 'e', action: 'mcp.tools.echo', input: '{ "text": "ours" }' }] });
    expect(sessionOf('theirs')).toEqual(expect.any(String));
    expect(sessionOf('ours')).toEqual(expect.any(String));
    expect(sessionOf('theirs')).not.toBe(sessionOf('ours'));
  });

  it('refuses to disconnect a server whose tools are in use, then disconnects it', async () => {
    const connected = await connect({ name: 'short-lived', url: mcp.url });
    const wf = await defineWorkflow({ name: 'uses-short-lived', steps: [{ id: 'a', action: 'mcp.short-lived.echo' }] });
    expect(wf.status).toBe(201);
    expectError(await t.http().delete(`/api/mcp-servers/${connected.body.id}`).set(bearer(org.admin)), 409, 'PLUGIN_IN_USE');
    expect((await t.http().delete(`/api/workflows/${wf.body.id}`).set(bearer(org.admin))).status).toBe(204);
    expect((await t.http().delete(`/api/mcp-servers/${connected.body.id}`).set(bearer(org.admin))).status).toBe(204);
    expectError(await t.http().get(`/api/mcp-servers/${connected.body.id}`).set(bearer(org.admin)), 404, 'MCP_SERVER_NOT_FOUND');
  });

  describe('against @modelcontextprotocol/server-everything', () => {
    let everything: ChildProcess;
    let url: string;

    beforeAll(async () => {
      const port = Number(new URL(await closedPortUrl()).port);
      everything = spawn(process.execPath, [require.resolve('@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'], {
        env: { ...process.env, PORT: String(port) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      await new Promise<void>((resolve, reject) => {
        everything.stderr!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
        everything.on('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
      });
      url = `http://127.0.0.1:${port}/mcp`;
    });
    afterAll(() => {
      everything.kill();
    });

    it('lists its tools and calls one from a workflow step', async () => {
      const res = await connect({ name: 'everything', url });
      expect(res.status).toBe(201);
      const names = res.body.tools.map((x: { name: string }) => x.name);
      expect(names).toEqual(expect.arrayContaining(['echo', 'get-sum']));
      const body = await run({
        steps: [
          { id: 'sum', action: 'mcp.everything.get-sum', input: '{ "a": 2, "b": 3 }' },
          { id: 'echo', action: 'mcp.everything.echo', input: '{ "message": "hello" }' },
        ],
      });
      expect(body.status).toBe('succeeded');
      expect(body.steps.find((s) => s.id === 'sum')!.output).toMatchObject({ text: expect.stringContaining('5') });
      expect(body.steps.find((s) => s.id === 'echo')!.output).toMatchObject({ text: expect.stringContaining('hello') });
    });
  });
});
