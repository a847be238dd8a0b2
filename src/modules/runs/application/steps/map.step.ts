import { Injectable } from '@nestjs/common';
import { Coalescer } from '../../../../shared/batching/coalescer';
import { canceled, Failure, failed, Outcome } from '../../../../shared/jobs/outcome';
import {
  DefinitionContext,
  innerStepProblems,
  StepDefinition,
  WORKFLOW_LIMITS,
  WorkflowDefinition,
} from '../../../workflows/domain/definition';
import { RunItem } from '../../domain/run';
import { ItemWrite, RunRepository } from '../../domain/run.repository';
import { retryWait } from './retry';
import { StepAnswer, StepContext, StepKind, StepScope } from './step-kind';
import { timeOrderedId } from '../../../../shared/ids/time-ordered-id';

/** The kinds a map's step may be: those that run on their own. */
const INNER_KINDS = ['agent', 'action', 'sleep'];

/** Where the map step's kinds come from (the registry, which holds the map step too). */
export interface InnerKinds {
  of(step: StepDefinition): StepKind;
}

/**
 * `{ "map": { "over": "<JSONata giving an array>", "step": { ...a step... }, "concurrency": 5,
 * "skipFailures": false } }`: the inner step runs once per item, with `item` and `index` in its
 * expressions' context and the item as its input unless it has one. Each item is a record of
 * its own (status, attempts, output), committed as it ends, so a crash runs again only the
 * items that were in flight; an item that waits (a sleep, a retry's backoff) lets the run wait
 * for it without a worker. The output is the items' outputs in order (null for one that failed
 * with `skipFailures`); without it, the first item that fails fails the step.
 */
@Injectable()
export class MapStep implements StepKind {
  readonly key = 'map';
  readonly schema = {
    type: 'object',
    additionalProperties: false,
    required: ['over', 'step'],
    properties: {
      over: { type: 'string', minLength: 1, maxLength: 10000 },
      step: { type: 'object' },
      concurrency: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.mapConcurrency },
      skipFailures: { type: 'boolean' },
    },
  };
  readonly callsOut = false;
  private kinds?: InnerKinds;
  private readonly writes = new Coalescer<ItemWrite, boolean>((writes) => this.runs.writeItems(writes));

  constructor(private readonly runs: RunRepository) {}

  /** Set once by the registry. */
  useKinds(kinds: InnerKinds): void {
    this.kinds = kinds;
  }

  problems(step: StepDefinition, at: string, context: DefinitionContext, workflow: WorkflowDefinition) {
    return innerStepProblems(step.map!.step, `${at}.map.step`, context, workflow, { id: step.id, kinds: INNER_KINDS });
  }

  expressions(step: StepDefinition) {
    const inner = step.map!.step;
    return [
      { path: 'map.over', expression: step.map!.over },
      ...(['input', 'if'] as const).flatMap((f) => (inner[f] === undefined ? [] : [{ path: `map.step.${f}`, expression: inner[f] }])),
      ...(inner.sleep?.until === undefined ? [] : [{ path: 'map.step.sleep.until', expression: inner.sleep.until }]),
    ];
  }

  async run(context: StepContext): Promise<StepAnswer> {
    const { run, step, record, signal } = context;
    const spec = step.map!;
    let items: unknown[];
    if (record && (record.status === 'running' || record.status === 'waiting') && Array.isArray(record.input)) {
      // Begun by an earlier worker: its items are recorded.
      items = record.input;
    } else {
      const over = await context.evaluate(spec.over);
      if ('error' in over) return { status: 'failed', error: { code: over.error.code, message: `map.over: ${over.error.message}` } };
      if (!Array.isArray(over.value)) return failed('MAP_INVALID', `map.over gave ${describe(over.value)}, not an array`);
      if (over.value.length > WORKFLOW_LIMITS.mapItems)
        return failed('MAP_TOO_LARGE', `map.over gave ${over.value.length} items; at most ${WORKFLOW_LIMITS.mapItems} are allowed`);
      if (!(await this.runs.beginItems(run.id, step.id, over.value))) return canceled();
      items = over.value;
    }

    const open = await this.runs.openItems(run.id, step.id);
    const now = Date.now();
    const due = open.filter((i) => i.status !== 'waiting' || (i.resumeAt?.getTime() ?? 0) <= now);
    const later = open.filter((i) => !due.includes(i)).map((i) => i.resumeAt!.getTime());
    const stop = new AbortController();
    const stopAll = () => stop.abort();
    signal.addEventListener('abort', stopAll, { once: true });
    let failure: Failure | null = null;
    // An item's record is written while its lane goes on to the next item; all are awaited before the step ends.
    const written: Array<Promise<{ applied: boolean } | { error: unknown }>> = [];
    try {
      const lanes = Array.from({ length: Math.min(spec.concurrency ?? 1, due.length) }, async () => {
        for (let item = due.shift(); item && !stop.signal.aborted; item = due.shift()) {
          const ended = await this.runItem(context, items, item, stop.signal);
          if (ended.written)
            written.push(
              ended.written.then(
                (applied) => ({ applied }),
                (error: unknown) => ({ error }),
              ),
            );
          if ('resumeAt' in ended) later.push(ended.resumeAt.getTime());
          else if (ended.status === 'failed' && !spec.skipFailures && !failure) {
            failure = { code: 'MAP_ITEM_FAILED', message: `Item ${item.index} failed: ${ended.error.code}: ${ended.error.message}` };
            stop.abort();
          }
        }
      });
      await Promise.all(lanes);
    } finally {
      signal.removeEventListener('abort', stopAll);
    }
    for (const result of await Promise.all(written)) {
      // The database went away: the run's job is tried again. A write that did not apply: the run no longer runs.
      if ('error' in result) throw result.error;
      if (!result.applied) return canceled();
    }
    if (signal.aborted) return canceled();
    if (failure) return { status: 'failed', error: failure };
    if (later.length) return { status: 'waiting', resumeAt: new Date(Math.min(...later)) };
    const all = await this.runs.allItems(run.id, step.id);
    return { status: 'succeeded', output: all.map((i) => (i.status === 'succeeded' ? i.output : null)) };
  }

  /** One item through the inner step's kind, its attempts (waiting between them) and its record. */
  private async runItem(context: StepContext, items: unknown[], item: RunItem, signal: AbortSignal): Promise<ItemEnd> {
    const { run, step } = context;
    const inner = { ...step.map!.step, id: step.id } as StepDefinition;
    const kind = this.kinds!.of(inner);
    const scope: StepScope = { ...context.scope, item: items[item.index], index: item.index };
    const evaluate = (expression: string) => context.evaluate(expression, scope);
    const write = (change: Omit<ItemWrite, 'runId' | 'stepId' | 'index'>) =>
      this.writes.add({ runId: run.id, stepId: step.id, index: item.index, ...change });
    // The end of the item, its record being written.
    const ends = <E extends ItemEnd>(end: E, change: Omit<ItemWrite, 'runId' | 'stepId' | 'index'>): E => ({
      ...end,
      written: write(change),
    });

    let input: unknown = items[item.index];
    if (inner.input !== undefined) {
      const evaluated = await evaluate(inner.input);
      if ('error' in evaluated) {
        const error = { code: evaluated.error.code, message: `input: ${evaluated.error.message}` };
        return ends({ status: 'failed', error }, { status: 'failed', attempts: item.attempts, error });
      }
      input = evaluated.value;
    }
    const executionId = kind.keepsExecution ? (item.executionId ?? timeOrderedId()) : null;
    const resuming = item.status === 'waiting';
    const itemContext = (attempt: number): StepContext => ({
      ...context,
      step: inner,
      record: { ...item, id: step.id, input, reason: null, childRunId: null, waitingFor: null },
      attempt,
      input,
      scope,
      executionId,
      callId: `${step.id}:${item.index}`,
      signal,
      evaluate,
    });
    const maxAttempts = inner.retry?.maxAttempts ?? (await kind.defaultAttempts?.(itemContext(1))) ?? 1;
    for (let attempt = item.attempts + 1; ; attempt++) {
      const counted = kind.callsOut || !resuming ? attempt : item.attempts;
      const answer = await kind.run(itemContext(counted));
      if (answer.status === 'waiting') {
        // No kind a map runs waits for an event: a wait has its time.
        const resumeAt = answer.resumeAt ?? new Date();
        return ends({ resumeAt }, { status: 'waiting', attempts: counted, resumeAt, executionId });
      }
      const outcome: Outcome = answer;
      if (outcome.status === 'failed' || outcome.status === 'timed_out') {
        const wait = retryWait(inner.retry, outcome, counted, maxAttempts);
        if (wait !== null && !signal.aborted) {
          if (wait === 0) continue;
          const resumeAt = new Date(Date.now() + wait);
          return ends({ resumeAt }, { status: 'waiting', attempts: counted, error: outcome.error, resumeAt, executionId });
        }
      }
      await kind.settle?.(itemContext(counted), outcome);
      if (outcome.status === 'canceled' || (signal.aborted && outcome.status !== 'succeeded')) return { status: 'canceled' };
      if (outcome.status !== 'succeeded')
        return ends({ status: 'failed', error: outcome.error }, { status: 'failed', attempts: counted, error: outcome.error, executionId });
      return ends({ status: 'succeeded' }, { status: 'succeeded', attempts: counted, output: outcome.output, executionId });
    }
  }
}

/** How an item ended in this worker; `written` is its record's write, under way. */
type ItemEnd = ({ status: 'succeeded' | 'canceled' } | { status: 'failed'; error: Failure } | { resumeAt: Date }) & {
  written?: Promise<boolean>;
};

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  return `a${typeof value === 'object' ? 'n object' : ` ${typeof value}`}`;
}
