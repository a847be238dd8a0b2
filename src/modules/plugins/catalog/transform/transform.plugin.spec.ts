import { ExecuteRequest } from '../../domain/plugin';
import { failureOf, makeExecuteRequest } from '../test-support/execute-request';
import { compileJsonata, transformPlugin } from './transform.plugin';

const { jsonata } = transformPlugin.agentKinds;

function run(expression: string, input: unknown, overrides: Partial<ExecuteRequest> = {}) {
  return jsonata.execute(makeExecuteRequest({ config: { expression }, input, ...overrides }));
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work();
  return { result, ms: Date.now() - started };
}

describe('transform.jsonata', () => {
  it('is the same capability as an agent kind and as an action', () => {
    expect(transformPlugin.actions.jsonata).toBe(jsonata);
    expect(transformPlugin.manifest.agentKinds.map((k) => k.name)).toEqual(['jsonata']);
    expect(transformPlugin.manifest.actions.map((a) => a.name)).toEqual(['jsonata']);
  });

  it('evaluates the expression over the input', async () => {
    const input = {
      order: {
        items: [
          { name: 'a', price: 2, qty: 3 },
          { name: 'b', price: 5, qty: 1 },
        ],
      },
    };
    await expect(run('{ "names": order.items.name, "total": $sum(order.items.(price * qty)) }', input)).resolves.toEqual({
      names: ['a', 'b'],
      total: 11,
    });
  });

  it('gives null when nothing matches', async () => {
    await expect(run('missing.field', { a: 1 })).resolves.toBeNull();
  });

  it('reports an expression that does not compile, with the position', async () => {
    const error = await failureOf(run('{ "a": ', {}), 'EXPRESSION_FAILED');
    expect(error.message).toMatch(/^Invalid expression: .*S0203 at position 7/);
  });

  it('reports an evaluation error with its JSONata message and position', async () => {
    const error = await failureOf(run('a + "x"', { a: 1 }), 'EXPRESSION_FAILED');
    expect(error.message).toContain('The right side of the "+" operator must evaluate to a number (JSONata T2002 at position 3)');
  });

  it('stops runaway non-tail recursion as too deep, long before the time bound', async () => {
    const { result: error, ms } = await timed(() =>
      failureOf(run('( $f := function($n){ 1 + $f($n + 1) }; $f(0) )', {}), 'EXPRESSION_FAILED'),
    );
    expect(error.message).toMatch(/too deep/);
    expect(ms).toBeLessThan(500);
  });

  it('does not count a wide mapping as deep (object members are evaluated concurrently)', async () => {
    const fields = Array.from({ length: 400 }, (_, i) => `"f${i}": a.b.c`).join(', ');
    const output = (await run(`{ ${fields} }`, { a: { b: { c: 1 } } })) as Record<string, number>;
    expect(Object.keys(output)).toHaveLength(400);
  });

  it('sees deep recursion inside $eval too', async () => {
    const error = await failureOf(run('$eval("( $f := function($n){ 1 + $f($n + 1) }; $f(0) )")', {}), 'EXPRESSION_FAILED');
    expect(error.message).toMatch(/too deep/);
  });

  it('stops an endless tail-recursive loop (optimized, so it never gets deep) by time, within ~1 s', async () => {
    const { result: error, ms } = await timed(() => failureOf(run('( $f := function($n){ $f($n + 1) }; $f(0) )', {}), 'AGENT_TIMEOUT'));
    expect(error.message).toBe('Expression did not finish within 1000 ms');
    expect(ms).toBeGreaterThanOrEqual(950);
    expect(ms).toBeLessThan(1500);
  });

  it('never runs longer than the request timeout', async () => {
    const { ms } = await timed(() => failureOf(run('[1..10000000].($ * 2)', {}, { timeoutMs: 300 }), 'AGENT_TIMEOUT'));
    expect(ms).toBeLessThan(900);
  });

  it('stops promptly when the signal aborts mid-evaluation, as CANCELED', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const { ms } = await timed(() =>
      failureOf(run('( $f := function($n){ $f($n + 1) }; $f(0) )', {}, { signal: controller.signal }), 'CANCELED'),
    );
    expect(ms).toBeLessThan(400);
  });

  it('reports AGENT_TIMEOUT when the signal aborts because time ran out', async () => {
    const signal = AbortSignal.timeout(100);
    const { ms } = await timed(() => failureOf(run('( $f := function($n){ $f($n + 1) }; $f(0) )', {}, { signal }), 'AGENT_TIMEOUT'));
    expect(ms).toBeLessThan(400);
  });

  it('does not start when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await failureOf(run('1 + 1', {}, { signal: controller.signal }), 'CANCELED');
  });

  it('refuses an output over 1 MiB', async () => {
    const error = await failureOf(run('$pad("", 1100000, "x")', {}), 'INVALID_OUTPUT');
    expect(error.message).toMatch(/limit is 1048576/);
  });

  it('refuses a function as output', async () => {
    await failureOf(run('function($x){ $x }', {}), 'INVALID_OUTPUT');
  });
});

describe('compileJsonata', () => {
  it('accepts a valid expression', () => {
    expect(compileJsonata('$sum(items.price)')).toEqual({ ok: true });
  });

  it('explains an invalid one', () => {
    expect(compileJsonata('items[')).toEqual({ ok: false, message: expect.stringMatching(/JSONata S0\d+ at position \d+/) as unknown });
  });
});
