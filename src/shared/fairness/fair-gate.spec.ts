import { FairGate, GateFullError } from './fair-gate';

/** Work that ends when the test says so, recording when it started. */
function controlled(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    work: async () => {
      log.push(name);
      await done;
      return name;
    },
    finish: () => finish(),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('FairGate', () => {
  it('holds an organization to its limit while slots stay free for the others', async () => {
    const gate = new FairGate(4);
    const started: string[] = [];
    const a = [1, 2, 3].map((i) => controlled(started, `a${i}`));
    const runs = a.map((c) => gate.run('a', 1, c.work));
    const b = controlled(started, 'b1');
    const bRun = gate.run('b', 1, b.work);
    await turn();
    expect(started).toEqual(['a1', 'b1']);
    expect(gate.inUse).toBe(2);
    a[0].finish();
    await turn();
    expect(started).toEqual(['a1', 'b1', 'a2']);
    b.finish();
    a[1].finish();
    a[2].finish();
    await expect(Promise.all([...runs, bRun])).resolves.toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(gate.inUse).toBe(0);
  });

  it('gives a freed slot to the next organization in turn, not to the one that queued first', async () => {
    const gate = new FairGate(2);
    const started: string[] = [];
    const a = Array.from({ length: 6 }, (_, i) => controlled(started, `a${i + 1}`));
    const aRuns = a.map((c) => gate.run('a', 2, c.work));
    const b = [1, 2].map((i) => controlled(started, `b${i}`));
    const bRuns = b.map((c) => gate.run('b', 2, c.work));
    const c = controlled(started, 'c1');
    const cRun = gate.run('c', 2, c.work);
    await turn();
    expect(started).toEqual(['a1', 'a2']);
    // Four slots free one after another: b, c, a, b take them, in turn.
    for (const [index, expected] of [
      [0, 'b1'],
      [1, 'c1'],
      [2, 'a3'],
      [3, 'b2'],
    ] as const) {
      [a[0], a[1], b[0], c][index].finish();
      await turn();
      expect(started[started.length - 1]).toBe(expected);
    }
    for (const each of [...a, ...b]) each.finish();
    await Promise.all([...aRuns, ...bRuns, cRun]);
    expect(started).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4', 'a5', 'a6']);
  });

  it('lets a waiter give up with its signal, and refuses work past the most that may wait', async () => {
    const gate = new FairGate(1, 2);
    const started: string[] = [];
    const first = controlled(started, 'a1');
    const running = gate.run('a', 1, first.work);
    const abort = new AbortController();
    const gaveUp = gate.run('b', 1, () => Promise.resolve('b1'), abort.signal);
    const queued = gate.run('c', 1, () => Promise.resolve('c1'));
    await expect(gate.run('d', 1, () => Promise.resolve('d1'))).rejects.toThrow(GateFullError);
    abort.abort(new Error('caller left'));
    await expect(gaveUp).rejects.toThrow('caller left');
    first.finish();
    await expect(running).resolves.toBe('a1');
    await expect(queued).resolves.toBe('c1');
    expect(gate.inUse).toBe(0);
  });

  it('frees the slot of work that fails', async () => {
    const gate = new FairGate(1);
    await expect(gate.run('a', 1, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run('b', 1, () => Promise.resolve('next'))).resolves.toBe('next');
  });
});
