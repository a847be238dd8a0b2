import { apiPath, definitionValidator, locate, parseDefinition, pathSegments, placeServerProblems } from './definition-problems';

describe('definition problems in the editor', () => {
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'steps'],
    properties: {
      name: { type: 'string', minLength: 1 },
      steps: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['id'],
          properties: {
            id: { type: 'string' },
            retry: { type: 'object', properties: { maxAttempts: { type: 'integer', minimum: 1 } } },
            onError: { enum: ['fail', 'continue'] },
          },
        },
      },
    },
  };
  const text = [
    '{',
    '  "name": "",',
    '  "steps": [',
    '    { "id": "a", "retry": { "maxAttempts": 0 }, "extra": 1 },',
    '    {}',
    '  ]',
    '}',
  ].join('\n');
  const at = (from: number, to: number) => text.slice(from, to);

  it('reads both spellings of a path', () => {
    expect(pathSegments('steps[0].retry.maxAttempts')).toEqual(['steps', 0, 'retry', 'maxAttempts']);
    expect(pathSegments('#/steps/0/a~1b')).toEqual(['steps', 0, 'a/b']);
    expect(pathSegments('')).toEqual([]);
    expect(apiPath(['steps', 12, 'needs', 0])).toBe('steps[12].needs[0]');
  });

  it('places a path on the key it names, the nearest part the text has, or the start', () => {
    const { root } = parseDefinition(text);
    const maxAttempts = locate(root, ['steps', 0, 'retry', 'maxAttempts']);
    expect(at(maxAttempts.from, maxAttempts.to)).toBe('"maxAttempts"');
    const missing = locate(root, ['steps', 0, 'agent', 'id']);
    expect(at(missing.from, missing.from + 3)).toBe('{ "');
    const element = locate(root, ['steps', 1]);
    expect(at(element.from, element.to)).toBe('{');
    expect(locate(root, [])).toEqual({ from: 0, to: 1 });
  });

  it('reports syntax errors with their place and no value', () => {
    const broken = parseDefinition('{ "name": "x", }');
    expect(broken.value).toBeUndefined();
    expect(broken.problems[0]).toMatchObject({ source: 'syntax', message: expect.stringMatching(/^JSON: /), from: 15 });
  });

  it("validates against the schema, naming each problem once at its own path, in the API's spelling", () => {
    const parsed = parseDefinition(text);
    const problems = definitionValidator(schema)(parsed.value, parsed.root);
    expect(problems.map((p) => [p.path, p.source])).toEqual(
      expect.arrayContaining([
        ['name', 'schema'],
        ['steps[0].retry.maxAttempts', 'schema'],
        ['steps[0].extra', 'schema'],
        ['steps[1]', 'schema'],
      ]),
    );
    expect(problems).toHaveLength(4);
    const extra = problems.find((p) => p.path === 'steps[0].extra')!;
    expect(extra.message).toBe('is not a field here');
    expect(at(extra.from, extra.to)).toBe('"extra"');
    expect(problems.find((p) => p.path === 'steps[1]')!.message).toContain('required property "id"');
    const fine = parseDefinition('{"name":"x","steps":[{"id":"a","onError":"continue"}]}');
    expect(definitionValidator(schema)(fine.value, fine.root)).toEqual([]);
  });

  it("places the server's problems in the text as it is now", () => {
    const { root } = parseDefinition(text);
    const [cycle, step] = placeServerProblems(
      [
        { path: 'steps', message: 'the steps form a cycle: a -> b -> a' },
        { path: 'steps[0].id', message: "step id 'a' is used twice" },
      ],
      root,
    );
    expect(at(cycle.from, cycle.to)).toBe('"steps"');
    expect(at(step.from, step.to)).toBe('"id"');
    expect(step).toMatchObject({ source: 'server', path: 'steps[0].id' });
  });
});
