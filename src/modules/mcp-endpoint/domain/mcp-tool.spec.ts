import { McpToolTarget, structuredOf, toolCatalog } from './mcp-tool';

const target = (kind: 'workflow' | 'agent', name: string, extra: Partial<McpToolTarget> = {}): McpToolTarget => ({
  kind,
  id: `${kind}-${name}`,
  name,
  description: '',
  inputSchema: null,
  ...extra,
});

describe('toolCatalog', () => {
  it('names tools by kind and name, in MCP characters', () => {
    const tools = toolCatalog([target('workflow', 'Double it!'), target('agent', 'Résumé  writer')]);
    expect(tools.map((t) => t.name)).toEqual(['workflow_double_it', 'agent_r_sum_writer']);
    expect(tools.every((t) => /^[a-zA-Z0-9_-]{1,64}$/.test(t.name))).toBe(true);
  });

  it('tells colliding names apart by order, deterministically, within 64 characters', () => {
    const long = 'x'.repeat(80);
    const tools = toolCatalog([
      target('workflow', 'a b'),
      target('workflow', 'a_b'),
      target('workflow', 'A-B'),
      target('workflow', long),
      target('workflow', long),
    ]);
    expect(tools.map((t) => t.name)).toEqual([
      'workflow_a_b',
      'workflow_a_b_2',
      'workflow_a-b',
      `workflow_${'x'.repeat(55)}`,
      `workflow_${'x'.repeat(53)}_2`,
    ]);
    expect(tools.every((t) => t.name.length <= 64)).toBe(true);
  });

  it('defaults the input schema to an object and the description to the kind and name', () => {
    const [tool] = toolCatalog([target('agent', 'Helper')]);
    expect(tool.inputSchema).toEqual({ type: 'object' });
    expect(tool.description).toBe("Agent 'Helper'");
    const [given] = toolCatalog([target('agent', 'Helper', { description: 'Helps', inputSchema: { type: 'object', required: ['q'] } })]);
    expect(given).toMatchObject({ description: 'Helps', inputSchema: { type: 'object', required: ['q'] } });
  });
});

describe('structuredOf', () => {
  it('keeps objects and wraps anything else as { result }', () => {
    expect(structuredOf({ a: 1 })).toEqual({ a: 1 });
    expect(structuredOf([1, 2])).toEqual({ result: [1, 2] });
    expect(structuredOf(4)).toEqual({ result: 4 });
    expect(structuredOf(null)).toEqual({ result: null });
    expect(structuredOf(undefined)).toEqual({ result: null });
  });
});
