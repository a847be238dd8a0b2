import { EvaluateOptions, ExpressionFailure } from '../../../../shared/expressions/expression-sandbox';
import { failureOf, makeExecuteRequest } from '../../../../../test/support/execute-request';
import { createTransformPlugin, ExpressionEvaluator, MAX_OUTPUT_BYTES } from './transform.plugin';

/** An in-memory evaluator: answers what it is told, and records what it was asked. */
function fakeEvaluator(answer: () => Promise<unknown>) {
  const calls: Array<{ expression: string; input: unknown; options: EvaluateOptions }> = [];
  const evaluator: ExpressionEvaluator = {
    evaluate: (expression, input, options) => {
      calls.push({ expression, input, options });
      return answer();
    },
  };
  return { evaluator, calls };
}

describe('transform.jsonata', () => {
  it('is the same capability as an agent kind and as an action', () => {
    const plugin = createTransformPlugin(fakeEvaluator(() => Promise.resolve(null)).evaluator);
    expect(plugin.actions.jsonata).toBe(plugin.agentKinds.jsonata);
    expect(plugin.manifest.agentKinds.map((k) => k.name)).toEqual(['jsonata']);
    expect(plugin.manifest.actions.map((a) => a.name)).toEqual(['jsonata']);
  });

  it('evaluates the expression in the sandbox, with the request bounds and the output limit', async () => {
    const { evaluator, calls } = fakeEvaluator(() => Promise.resolve({ total: 11 }));
    const { jsonata } = createTransformPlugin(evaluator).agentKinds;
    const signal = new AbortController().signal;
    const output = await jsonata.execute(
      makeExecuteRequest({ organizationId: 'org-1', config: { expression: '$sum(x)' }, input: { x: [5, 6] }, signal, timeoutMs: 700 }),
    );
    expect(output).toEqual({ total: 11 });
    expect(calls).toEqual([
      {
        expression: '$sum(x)',
        input: { x: [5, 6] },
        options: { organizationId: 'org-1', signal, timeoutMs: 700, maxOutputBytes: MAX_OUTPUT_BYTES },
      },
    ]);
  });

  it.each(['EXPRESSION_FAILED', 'EXPRESSION_TIMEOUT'] as const)('reports the sandbox failure %s under its own code', async (code) => {
    const { evaluator } = fakeEvaluator(() => Promise.reject(new ExpressionFailure(code, 'the limit of 128 MB')));
    const { jsonata } = createTransformPlugin(evaluator).agentKinds;
    const error = await failureOf(jsonata.execute(makeExecuteRequest({ config: { expression: '$' } })), code);
    expect(error.message).toBe('the limit of 128 MB');
  });

  it('passes anything else on as it is (an infrastructure failure, retried)', async () => {
    const { evaluator } = fakeEvaluator(() => Promise.reject(new Error('Task queue is at limit')));
    const { jsonata } = createTransformPlugin(evaluator).agentKinds;
    await expect(jsonata.execute(makeExecuteRequest({ config: { expression: '$' } }))).rejects.toThrow('Task queue is at limit');
  });

  describe('checkConfig', () => {
    const { jsonata } = createTransformPlugin(fakeEvaluator(() => Promise.resolve(null)).evaluator).agentKinds;

    it('accepts a valid expression, with a regular expression RE2 runs', () => {
      expect(jsonata.checkConfig!({ expression: '$sum(items.price) & $match(name, /^[a-z]+\\d*$/i).match' })).toEqual([]);
    });

    it('explains an expression that does not compile, with the position', () => {
      expect(jsonata.checkConfig!({ expression: 'items[' })).toEqual([
        { path: 'expression', message: expect.stringMatching(/^expression cannot be used: .*JSONata S0\d+ at position \d+/) as unknown },
      ]);
    });

    it.each([
      ['a lookahead', '$contains(text, /^(a+)+(?=b)/)', '(?='],
      ['a backreference', '$match(text, /(a)\\1/)', '\\1'],
      ['a lookbehind', '$replace(text, /(?<=a)b/, "c")', '(?<='],
      ['one inside $eval', '$eval("$contains(x, /(?!a)b/)")', null],
    ])('refuses %s', (_what, expression, token) => {
      const problems = jsonata.checkConfig!({ expression });
      if (token === null) {
        // $eval's argument is a string until it runs: the sandbox's RE2 refuses it then.
        expect(problems).toEqual([]);
        return;
      }
      expect(problems).toHaveLength(1);
      expect(problems[0].path).toBe('expression');
      expect(problems[0].message).toContain('linear-time engine');
      expect(problems[0].message).toContain(token);
    });
  });
});
