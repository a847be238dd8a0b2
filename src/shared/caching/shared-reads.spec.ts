import { SharedReads } from './shared-reads';

/** A read the spec answers by hand, counting how often it was started per key. */
function controlledReads() {
  const started: string[] = [];
  const pending: Array<{ key: string; answer: (value: string) => void; fail: (error: Error) => void }> = [];
  const read = (key: string) =>
    new Promise<string>((answer, fail) => {
      started.push(key);
      pending.push({ key, answer, fail });
    });
  return { started, pending, read };
}

describe('SharedReads', () => {
  let inTransaction = false;
  beforeEach(() => (inTransaction = false));

  it('shares one read among the callers that ask while it runs, and keeps its answer for the time given', async () => {
    let now = 1_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const { started, pending, read } = controlledReads();
    const reads = new SharedReads(5_000, read, () => inTransaction);

    const both = Promise.all([reads.get('a'), reads.get('a')]);
    pending[0].answer('first');
    expect(await both).toEqual(['first', 'first']);
    now += 4_999;
    expect(await reads.get('a')).toBe('first');
    expect(started).toEqual(['a']);

    now += 1;
    const again = reads.get('a');
    pending[1].answer('second');
    expect(await again).toBe('second');
    expect(started).toEqual(['a', 'a']);
    jest.restoreAllMocks();
  });

  it('does not make a caller in a transaction wait for a read started outside one (it may wait for the connection the transaction holds)', async () => {
    const { started, pending, read } = controlledReads();
    const reads = new SharedReads(5_000, read, () => inTransaction);

    const outside = reads.get('org');
    inTransaction = true;
    const inside = reads.get('org');
    expect(started).toEqual(['org', 'org']);
    // The transaction's own read answers while the first still waits.
    pending[1].answer('from the transaction');
    expect(await inside).toBe('from the transaction');
    pending[0].answer('from the pool');
    expect(await outside).toBe('from the pool');

    // Answered, the shared read serves callers in transactions too.
    expect(await reads.get('org')).toBe('from the pool');
    expect(started).toEqual(['org', 'org']);
  });

  it('shares a read started inside a transaction with callers outside it', async () => {
    const { started, pending, read } = controlledReads();
    const reads = new SharedReads(5_000, read, () => inTransaction);
    inTransaction = true;
    const inside = reads.get('org');
    inTransaction = false;
    const outside = reads.get('org');
    pending[0].answer('one');
    expect(await Promise.all([inside, outside])).toEqual(['one', 'one']);
    expect(started).toEqual(['org']);
  });

  it('does not keep a failed read, and forgets a key or all of them on demand', async () => {
    const { started, pending, read } = controlledReads();
    const reads = new SharedReads(60_000, read, () => inTransaction);

    const failed = reads.get('a');
    pending[0].fail(new Error('database away'));
    await expect(failed).rejects.toThrow('database away');
    const retried = reads.get('a');
    pending[1].answer('back');
    expect(await retried).toBe('back');

    reads.forget('a');
    const afterForget = reads.get('a');
    pending[2].answer('re-read');
    expect(await afterForget).toBe('re-read');

    reads.clear();
    const afterClear = reads.get('a');
    pending[3].answer('read again');
    expect(await afterClear).toBe('read again');
    expect(started).toEqual(['a', 'a', 'a', 'a']);
  });
});
