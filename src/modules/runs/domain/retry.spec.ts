import { DomainError } from '../../../shared/errors/domain-error';
import { assertRetryable, keptSteps, RetryGraph } from './retry';
import { NOT_TAKEN, pendingStep, StepRun, StepStatus } from './run';

/** A graph from `{ step: [needs] }` in that order; `branches` names each switch's branches (they need their switch). */
function graph(needs: Record<string, string[]>, branches: Record<string, string[]> = {}): RetryGraph {
  const effective = new Map(Object.entries(needs).map(([id, n]) => [id, [...n]]));
  for (const [s, list] of Object.entries(branches)) for (const b of list) effective.get(b)!.push(s);
  return { order: Object.keys(needs), needs: effective, branches: new Map(Object.entries(branches)) };
}

function step(id: string, status: StepStatus, reason: string | null = null): StepRun {
  return { ...pendingStep(id), status, reason, output: status === 'succeeded' ? { from: id } : null };
}

const notTakenBy = (id: string, switchId: string) => step(id, 'skipped', `${NOT_TAKEN}: switch '${switchId}' took case 0`);
const kept = (g: RetryGraph, old: StepRun[], fromStep?: string) => [...keptSteps(g, old, fromStep).keys()];

describe('keptSteps', () => {
  const line = graph({ a: [], b: ['a'], c: ['b'] });

  it('keeps the steps before the one that failed, and runs it and what follows again', () => {
    const old = [step('a', 'succeeded'), step('b', 'failed'), step('c', 'skipped', "needs 'b', which failed")];
    expect(kept(line, old)).toEqual(['a']);
  });

  it('keeps the records as they were committed, without a map step’s item counts', () => {
    const a = { ...step('a', 'succeeded'), attempts: 2, executionId: 'e-1', childRunId: 'c-1', items: { total: 3, succeeded: 3 } };
    const [record] = keptSteps(line, [a, step('b', 'failed'), step('c', 'skipped')]).values();
    expect(record).toEqual({ ...a, items: undefined });
  });

  it('runs fromStep and everything downstream of it again, even when they succeeded', () => {
    const old = [step('a', 'succeeded'), step('b', 'succeeded'), step('c', 'succeeded')];
    expect(kept(line, old, 'b')).toEqual(['a']);
    expect(kept(line, old, 'a')).toEqual([]);
    expect(kept(line, old, 'c')).toEqual(['a', 'b']);
  });

  it('keeps a parallel branch that succeeded beside one that failed, not what joins them', () => {
    const g = graph({ a: [], b: ['a'], c: ['a'], d: ['b', 'c'] });
    const old = [step('a', 'succeeded'), step('b', 'succeeded'), step('c', 'failed'), step('d', 'skipped')];
    expect(kept(g, old)).toEqual(['a', 'b']);
  });

  it('runs again a step after one that failed with onError: continue (it saw the old failure)', () => {
    const old = [step('a', 'succeeded'), step('b', 'failed'), step('c', 'succeeded')];
    expect(kept(line, old)).toEqual(['a']);
  });

  it('decides again a step skipped for another reason than a switch (its if, a run that ended)', () => {
    const g = graph({ a: [], b: [], c: ['a'] });
    const old = [step('a', 'succeeded'), step('b', 'skipped', 'its if was false'), step('c', 'skipped', 'the run ended without it')];
    expect(kept(g, old)).toEqual(['a']);
  });

  it('never keeps a step the old run was canceled or timed out in', () => {
    const old = [step('a', 'succeeded'), step('b', 'canceled'), step('c', 'skipped', 'the run ended without it')];
    expect(kept(line, old)).toEqual(['a']);
  });

  describe('a switch', () => {
    // s chooses between x and y; w needs only y; z needs x and fails.
    const g = graph({ s: [], x: [], y: [], w: ['y'], z: ['x'] }, { s: ['x', 'y'] });
    const old = [
      step('s', 'succeeded'),
      step('x', 'succeeded'),
      notTakenBy('y', 's'),
      step('w', 'skipped', `${NOT_TAKEN}: it needs only steps not taken`),
      step('z', 'failed'),
    ];

    it('kept keeps the branches it did not take skipped (else the retry would run them)', () => {
      expect(kept(g, old)).toEqual(['s', 'x', 'y', 'w']);
    });

    it('run again decides its branches again', () => {
      expect(kept(g, old, 's')).toEqual([]);
    });

    it('kept keeps a branch it did not take skipped even when fromStep names that branch', () => {
      expect(kept(g, old, 'y')).toEqual(['s', 'x', 'y', 'w']);
    });

    it('run again by fromStep in its taken branch runs that branch only', () => {
      expect(kept(g, old, 'x')).toEqual(['s', 'y', 'w']);
    });

    it('is run again when the version it runs has a branch the old run did not have', () => {
      const latest = graph({ s: [], x: [], y: [], v: [], w: ['y'], z: ['x'] }, { s: ['x', 'y', 'v'] });
      expect(kept(latest, old)).toEqual([]);
    });
  });

  describe('with another version', () => {
    it('keeps by id only the steps in both, and runs again what needs a new one', () => {
      const latest = graph({ a: [], n: ['a'], b: ['n'], c: [] });
      const old = [step('a', 'succeeded'), step('b', 'succeeded'), step('gone', 'succeeded'), step('c', 'failed')];
      expect(kept(latest, old)).toEqual(['a']);
    });
  });

  it('never keeps the onFailure step (it is not among the steps it walks)', () => {
    const old = [step('a', 'succeeded'), step('b', 'failed'), step('c', 'skipped'), step('notify', 'succeeded')];
    expect(kept(line, old)).not.toContain('notify');
  });
});

describe('assertRetryable', () => {
  const refusal = (run: Parameters<typeof assertRetryable>[0], fromStep?: string): string | null => {
    try {
      assertRetryable(run, fromStep);
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(DomainError);
      return (error as DomainError).code;
    }
  };

  it('refuses a run that goes on', () => {
    for (const status of ['queued', 'running', 'waiting'] as const) expect(refusal({ status, retriedBy: null })).toBe('RUN_NOT_FINISHED');
  });

  it('refuses a second retry, naming the first', () => {
    expect(refusal({ status: 'failed', retriedBy: 'r-2' })).toBe('RUN_ALREADY_RETRIED');
    expect(() => assertRetryable({ status: 'failed', retriedBy: 'r-2' }, undefined)).toThrow(/by run r-2/);
  });

  it('refuses a run that succeeded unless fromStep names where to start again', () => {
    expect(refusal({ status: 'succeeded', retriedBy: null })).toBe('NOTHING_TO_RETRY');
    expect(refusal({ status: 'succeeded', retriedBy: null }, 'b')).toBeNull();
  });

  it('retries a run that failed, was canceled or timed out', () => {
    for (const status of ['failed', 'canceled', 'timed_out'] as const) expect(refusal({ status, retriedBy: null })).toBeNull();
  });
});
