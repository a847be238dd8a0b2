import { loopbackClient, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { LoopbackMcpServer, startMcpServer, textTool } from '../../../../../test/support/mcp-server';
import { ExecutionError, PluginConnections } from '../../domain/plugin';
import { createMcpPlugin, McpConnectionConfig } from './mcp.plugin';

const TEXT = { type: 'object' as const, required: ['text'], properties: { text: { type: 'string' }, loud: { type: 'boolean' } } };

describe('the mcp plugin', () => {
  let server: LoopbackMcpServer;
  let connections: PluginConnections;

  beforeAll(async () => {
    server = await startMcpServer([
      textTool({ name: 'echo', description: 'Echo', inputSchema: TEXT }, (a) => (a.loud ? String(a.text).toUpperCase() : String(a.text))),
      textTool(
        {
          name: 'lookaround',
          description: 'A pattern RE2 cannot run',
          inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '(?=a)a' } } },
        },
        () => '',
      ),
      textTool({ name: 'has space', description: 'A name no action can carry', inputSchema: { type: 'object' } }, () => ''),
    ]);
    connections = createMcpPlugin(loopbackClient()).connections!;
  });
  afterAll(() => server.close());

  const read = (config: Record<string, unknown>) =>
    connections.read(config, 5000) as Promise<McpConnectionConfig & Record<string, unknown>>;

  it('keeps the tools it can offer and says why it skips the others', async () => {
    const config = await read({ url: server.url });
    expect(config.tools).toEqual([{ name: 'echo', description: 'Echo', inputSchema: TEXT }]);
    expect(config.skippedTools).toEqual([
      { name: 'lookaround', reason: expect.stringContaining('cannot be used') },
      { name: 'has space', reason: expect.stringContaining('name') },
    ]);
    expect(connections.actions(config)).toEqual([
      { name: 'echo', description: 'Echo', configSchema: { type: 'object', properties: TEXT.properties }, inputSchema: TEXT },
    ]);
  });

  it('offers a model only the arguments `with` leaves open', () => {
    expect(connections.remainingInput(TEXT, { loud: true })).toEqual({
      type: 'object',
      required: ['text'],
      properties: { text: { type: 'string' } },
    });
    expect(connections.remainingInput(TEXT, {})).toBe(TEXT);
  });

  it('calls with the input and `with` merged (`with` wins), and checks them against the stored schema first', async () => {
    const pluginConfig = await read({ url: server.url });
    const echo = connections.action('echo');
    const output = await echo.execute(makeExecuteRequest({ pluginConfig, config: { loud: true }, input: { text: 'hi', loud: false } }));
    expect(output).toEqual({ content: [{ type: 'text', text: 'HI' }], structuredContent: null, text: 'HI' });
    const calls = server.calls.length;
    await expect(echo.execute(makeExecuteRequest({ pluginConfig, input: { text: 3 } }))).rejects.toEqual(
      new ExecutionError('INVALID_INPUT', "The arguments do not fit the tool's input schema: arguments.text must be string"),
    );
    await expect(connections.action('gone').execute(makeExecuteRequest({ pluginConfig }))).rejects.toMatchObject({ code: 'TOOL_ERROR' });
    expect(server.calls.length).toBe(calls);
  });

  it('refuses an address the SSRF guard blocks before connecting', async () => {
    await expect(read({ url: 'http://169.254.169.254/mcp' })).rejects.toMatchObject({ code: 'OUTBOUND_REFUSED' });
  });
});
