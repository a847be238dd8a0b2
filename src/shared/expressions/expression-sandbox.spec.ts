import { AppConfig } from '../../config/app-config';
import { OrganizationShares } from '../fairness/organization-shares';
import { ExpressionFailure, ExpressionSandbox } from './expression-sandbox';

const MAX_OUTPUT_BYTES = 1024 * 1024;
const ORG = 'org-a';

/** A sandbox as the service builds it, every organization with the same share (the unset policy's). */
function sandboxOf(expressions: AppConfig['expressions']): ExpressionSandbox {
  const config = { expressions, shareOverrides: {} } as unknown as AppConfig;
  return new ExpressionSandbox(config, new OrganizationShares(config));
}

describe('ExpressionSandbox', () => {
  let sandbox: ExpressionSandbox;
  beforeAll(() => {
    sandbox = sandboxOf({ threads: 2, heapMb: 128, timeLimitMs: 1000, cores: 2, inline: false });
  });
  afterAll(() => sandbox.onModuleDestroy());

  const evaluate = (expression: string, input: unknown = {}, timeoutMs = 1000, signal?: AbortSignal) =>
    sandbox.evaluate(expression, input, { organizationId: ORG, timeoutMs, signal, maxOutputBytes: MAX_OUTPUT_BYTES });

  async function failure(work: Promise<unknown>): Promise<ExpressionFailure> {
    const error = await work.then(
      () => new Error('expected a failure'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExpressionFailure);
    return error as ExpressionFailure;
  }

  /** Polls `check` every few ms until it answers a truthy value, and answers it; throws past `timeoutMs`. */
  async function until<T>(check: () => T, what: string, timeoutMs = 3000): Promise<NonNullable<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value as NonNullable<T>;
      if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
    const started = Date.now();
    const result = await work();
    return { result, ms: Date.now() - started };
  }

  it('evaluates an expression over its input, with bindings, as JSON data', async () => {
    const input = {
      order: {
        items: [
          { price: 2, qty: 3 },
          { price: 5, qty: 1 },
        ],
      },
    };
    await expect(evaluate('{ "total": $sum(order.items.(price * qty)) }', input)).resolves.toEqual({ total: 11 });
    await expect(
      sandbox.evaluate('$x + 1', {}, { organizationId: ORG, timeoutMs: 100, bindings: { x: 41 }, maxOutputBytes: 100 }),
    ).resolves.toBe(42);
    await expect(evaluate('missing')).resolves.toBeNull();
  });

  it('reports an expression that does not compile or fails, with JSONata position', async () => {
    expect((await failure(evaluate('{ "a": '))).message).toMatch(/^Invalid expression: .*S0203 at position 7/);
    const error = await failure(evaluate('a + "x"', { a: 1 }));
    expect(error.code).toBe('EXPRESSION_FAILED');
    expect(error.message).toContain('(JSONata T2002 at position 3)');
  });

  it('stops a tail-recursive loop by its own time bound without killing the thread', async () => {
    const error = await failure(evaluate('( $f := function($n){ $f($n + 1) }; $f(0) )', {}, 300));
    expect(error).toMatchObject({
      code: 'EXPRESSION_TIMEOUT',
      message: 'Expression did not finish within 300 ms (the time limit of one evaluation)',
    });
  });

  it('kills the thread of a built-in that never yields ($sort of 30,000), at the time limit', async () => {
    const { result: error, ms } = await timed(() => failure(evaluate('$sort([1..30000], function($a, $b){ $a < $b })', {}, 200)));
    expect(error.code).toBe('EXPRESSION_TIMEOUT');
    expect(error.message).toMatch(/within 200 ms .*its thread was stopped|within 200 ms \(the time limit/);
    expect(ms).toBeLessThan(1000);
    await expect(evaluate('1 + 1')).resolves.toBe(2);
  });

  it('ends an allocation bomb as EXPRESSION_FAILED naming the memory limit; a new thread takes over and 50 evaluations succeed', async () => {
    // A time limit long enough that only the heap limit can end it, and the smallest heap.
    const small = sandboxOf({ threads: 1, heapMb: 64, timeLimitMs: 30_000, cores: 2, inline: false });
    try {
      const input = { s: 'x'.repeat(3_000_000) };
      const error = await failure(
        small.evaluate('$count([1..200].$lowercase($$.s & $string($)))', input, { organizationId: ORG, maxOutputBytes: 100 }),
      );
      expect(error).toMatchObject({
        code: 'EXPRESSION_FAILED',
        message: 'Expression needed more than the memory limit of 64 MB; its thread was stopped',
      });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => small.evaluate('$ * 2', i, { organizationId: ORG, maxOutputBytes: 100 })),
      );
      expect(results).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
      expect(small.threads).toBe(1);
    } finally {
      await small.onModuleDestroy();
    }
  });

  it('bounds ranges, strings and arrays before they are allocated', async () => {
    expect((await failure(evaluate('[1..100000000]'))).message).toMatch(/D2014|D2015/);
    expect((await failure(evaluate('$count([1..2000000])'))).message).toMatch(/exceed 1000000|D2015/);
    expect((await failure(evaluate('$pad("", 500000000, "x")'))).message).toMatch(/\$pad width 500000000 is over the limit/);
    expect((await failure(evaluate('( $s := $pad("", 400, "x"); $join([1..20000].($s)) )'))).message).toMatch(/\$join would make/);
    expect((await failure(evaluate('( $s := $pad("", 1000000, "x"); $string([1..1000].$s) )'))).message).toMatch(
      /\$string would make over/,
    );
    expect((await failure(evaluate('( $f := function($s){ $f($s & $s) }; $f("ab") )'))).message).toMatch(/over the limit of 4000000/);
  });

  it('refuses a result over the output limit', async () => {
    const error = await failure(sandbox.evaluate('$pad("", 2000, "x")', {}, { organizationId: ORG, timeoutMs: 100, maxOutputBytes: 1000 }));
    expect(error.message).toMatch(/output limit is 1000|output limit of 1000/);
  });

  it('matches regular expressions in linear time', async () => {
    const text = 'a'.repeat(5000);
    const { result, ms } = await timed(() => evaluate('$contains(text, /^(a+)+$/)', { text: `${text}!` }));
    expect(result).toBe(false);
    expect(ms).toBeLessThan(500);
    await expect(evaluate('$match("ab12cd345", /[0-9]+/).match')).resolves.toEqual(['12', '345']);
    await expect(evaluate('$replace("Hello World", /o/i, "0")')).resolves.toBe('Hell0 W0rld');
    await expect(evaluate('$split("a1b22c", /[0-9]+/)')).resolves.toEqual(['a', 'b', 'c']);
  });

  it("stops at once when the caller aborts, with the caller's reason", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('canceled by the test')), 50);
    await expect(evaluate('( $f := function($n){ $f($n + 1) }; $f(0) )', {}, 1000, controller.signal)).rejects.toThrow(
      'canceled by the test',
    );
  });

  it('does not count the wait for a free thread against the time limit', async () => {
    const single = sandboxOf({ threads: 1, heapMb: 128, timeLimitMs: 1000, cores: 2, inline: false });
    try {
      const busy = single.evaluate(
        '( $f := function($n){ $f($n + 1) }; $f(0) )',
        {},
        { organizationId: ORG, timeoutMs: 600, maxOutputBytes: 100 },
      );
      const queued = Array.from({ length: 3 }, (_, i) =>
        single.evaluate('$ + 1', i, { organizationId: ORG, timeoutMs: 200, maxOutputBytes: 100 }),
      );
      await expect(busy).rejects.toMatchObject({ code: 'EXPRESSION_TIMEOUT' });
      await expect(Promise.all(queued)).resolves.toEqual([1, 2, 3]);
    } finally {
      await single.onModuleDestroy();
    }
  });

  it("keeps a thread for other organizations: one organization's flood does not hold another's evaluation", async () => {
    const finished: string[] = [];
    const slow = '( $f := function($n){ $n = 0 ? 0 : $f($n - 1) }; $count([1..40].($f(300))) )';
    const flood = Array.from({ length: 6 }, (_, i) =>
      sandbox.evaluate(slow, {}, { organizationId: 'flooding', maxOutputBytes: 100 }).then(() => finished.push(`a${i}`)),
    );
    // The flood holds its thread before b asks.
    await until(() => sandbox.evaluating >= 1, 'the flood to hold a thread');
    await sandbox.evaluate('1 + 1', {}, { organizationId: 'quiet', maxOutputBytes: 100 }).then(() => finished.push('b'));
    await Promise.all(flood);
    // The flooding organization holds one of the two threads at a time; the other is free for b.
    expect(finished.indexOf('b')).toBeLessThanOrEqual(1);
    expect(finished).toHaveLength(7);
  });

  it('lets one organization hold no more threads than the cores less one: a core stays for the others and the service', async () => {
    // Three threads on two cores: by its tier's share an organization holds one; the operator's override may allow two.
    const capped = sandboxOf({ threads: 3, cores: 2, heapMb: 64, timeLimitMs: 5_000, inline: false });
    const overridden = new ExpressionSandbox(
      {
        expressions: { threads: 3, cores: 2, heapMb: 64, timeLimitMs: 5_000, inline: false },
        shareOverrides: { expressions: 2 },
      } as unknown as AppConfig,
      new OrganizationShares({ shareOverrides: { expressions: 2 } } as unknown as AppConfig),
    );
    try {
      const slow = '( $f := function($n){ $n = 0 ? 0 : $f($n - 1) }; $count([1..60].($f(300))) )';
      const runningWhileFlooded = async (target: ExpressionSandbox) => {
        const flood = Array.from({ length: 3 }, () => target.evaluate(slow, {}, { organizationId: 'flooding', maxOutputBytes: 100 }));
        // Once the flood holds threads (all three have been to the gate by then: it admits
        // them in the turn the flood starts), what it holds.
        const running = await until(() => target.evaluating, 'the flood to hold a thread');
        await Promise.all(flood);
        return running;
      };
      expect(await runningWhileFlooded(capped)).toBe(1);
      expect(await runningWhileFlooded(overridden)).toBe(2);
    } finally {
      await Promise.all([capped.onModuleDestroy(), overridden.onModuleDestroy()]);
    }
  });
});
