import { Coalescer } from './coalescer';

describe('Coalescer', () => {
  it('flushes what is added in one turn together and answers each caller its own result', async () => {
    const flushes: number[][] = [];
    const doubler = new Coalescer<number, number>(async (items) => {
      flushes.push(items);
      return items.map((n) => n * 2);
    });
    const first = await Promise.all([doubler.add(1), doubler.add(2), doubler.add(3)]);
    const later = await doubler.add(4);
    expect(first).toEqual([2, 4, 6]);
    expect(later).toBe(8);
    expect(flushes).toEqual([[1, 2, 3], [4]]);
  });

  it('rejects every caller of a failed flush, and recovers for the next', async () => {
    let fail = true;
    const flaky = new Coalescer<string, string>(async (items) => {
      if (fail) throw new Error('database gone');
      return items;
    });
    const results = await Promise.allSettled([flaky.add('a'), flaky.add('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(flaky.add('c')).resolves.toBe('c');
  });
});

describe('Coalescer with maxInFlight', () => {
  it('holds what arrives while a flush is under way and sends it with the next one', async () => {
    const flushes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const committer = new Coalescer<number, number>(
      async (items) => {
        flushes.push(items);
        if (flushes.length === 1) await gate;
        return items;
      },
      { maxInFlight: 1 },
    );
    const first = committer.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    // The first flush is under way: these three wait for it, then go together.
    const rest = [committer.add(2), committer.add(3)];
    await new Promise((resolve) => setImmediate(resolve));
    rest.push(committer.add(4));
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushes).toEqual([[1]]);
    release();
    expect(await Promise.all([first, ...rest])).toEqual([1, 2, 3, 4]);
    expect(flushes).toEqual([[1], [2, 3, 4]]);
  });
});
