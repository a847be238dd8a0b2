import type jsonata from 'jsonata';

/**
 * JSONata 2.x calls the function bound to `Symbol.for('jsonata.__evaluate_entry')` (awaiting
 * it) before evaluating every node (jsonata.js, `evaluate()`); binding is through `assign`,
 * whose typing only admits string names. Its own `timeout` and `stack` options are checked
 * at the same point; this hook adds what they cannot do.
 */
const EVALUATE_ENTRY = Symbol.for('jsonata.__evaluate_entry');

/** Evaluation runs on microtasks only; yield to the event loop this often (ms). */
const YIELD_EVERY_MS = 20;

export class EvaluationAborted extends Error {
  constructor() {
    super('Evaluation aborted');
    this.name = 'EvaluationAborted';
  }
}

/**
 * Makes evaluation of `expression` stop at its next node once `signal` aborts, and yield to
 * the event loop every few ms so timers, I/O and the abort itself get their turn meanwhile.
 */
export function guardEvaluation(expression: jsonata.Expression, signal: AbortSignal): void {
  let lastYield = Date.now();
  const onEntry = (): Promise<void> | undefined => {
    if (signal.aborted) throw new EvaluationAborted();
    const now = Date.now();
    if (now - lastYield < YIELD_EVERY_MS) return undefined;
    lastYield = now;
    return new Promise((resolve) => setImmediate(resolve));
  };
  (expression as unknown as { assign(name: symbol, value: unknown): void }).assign(EVALUATE_ENTRY, onEntry);
}
