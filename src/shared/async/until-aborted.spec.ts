import { untilAborted } from './until-aborted';

/** The rejections nobody handled, seen by Node once the microtasks of this turn have run. */
async function unhandledDuring(work: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await work();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

/** Work that settles when the test says so. */
function pending<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('untilAborted', () => {
  it('settles like the work while the signal holds', async () => {
    const work = pending<string>();
    const settled = untilAborted(work.promise, new AbortController().signal);
    work.resolve('done');
    expect(await settled).toBe('done');
    const failing = pending<string>();
    const failed = untilAborted(failing.promise, new AbortController().signal);
    failing.reject(new Error('no luck'));
    await expect(failed).rejects.toThrow('no luck');
  });

  it('rejects with the reason of a signal aborted before, and handles the work that fails after', async () => {
    const work = pending<string>();
    const unhandled = await unhandledDuring(async () => {
      await expect(untilAborted(work.promise, AbortSignal.abort(new Error('canceled')))).rejects.toThrow('canceled');
      work.reject(new Error('the work noticed'));
    });
    expect(unhandled).toEqual([]);
  });

  it('rejects as the signal aborts, and handles the work that fails after', async () => {
    const work = pending<string>();
    const cancel = new AbortController();
    const unhandled = await unhandledDuring(async () => {
      const settled = untilAborted(work.promise, cancel.signal);
      cancel.abort(new Error('canceled'));
      await expect(settled).rejects.toThrow('canceled');
      work.reject(new Error('the work noticed'));
    });
    expect(unhandled).toEqual([]);
  });
});
