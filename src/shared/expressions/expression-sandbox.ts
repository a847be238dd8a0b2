import { extname, join } from 'node:path';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Piscina } from 'piscina';
import { AppConfig } from '../../config/app-config';
import evaluateInThisThread, { EvaluationAnswer, EvaluationTask, timeoutMessage } from './sandbox-worker';

/** After its time is up, an evaluation that has not answered gets this long before its thread is killed. */
const KILL_GRACE_MS = 100;
/** How often evaluations in flight are checked against their time limit. */
const WATCHDOG_INTERVAL_MS = 20;
/** Evaluations waiting for a thread, beyond which callers are refused at once (an infrastructure failure). */
const MAX_QUEUE = 10_000;

export type ExpressionFailureCode = 'EXPRESSION_FAILED' | 'EXPRESSION_TIMEOUT';

/** An expression that failed by its own doing: the same input fails the same way, so it is never retried. */
export class ExpressionFailure extends Error {
  constructor(
    readonly code: ExpressionFailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExpressionFailure';
  }
}

export interface EvaluateOptions {
  /** The caller's own bound, capped at the sandbox's time limit (EXPRESSION_TIMEOUT_MS); unset: that limit. */
  timeoutMs?: number;
  /** Aborts the evaluation (its thread is stopped); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  bindings?: Record<string, unknown>;
  /** Largest result, as JSON. */
  maxOutputBytes: number;
}

/**
 * Where every JSONata expression a tenant wrote is evaluated: a pool of worker threads, so no
 * expression runs on the event loop that serves requests and jobs. Each evaluation is bounded
 * by a wall-clock timeout that terminates its thread if the expression does not yield, and by
 * the thread's heap limit; a killed thread is replaced, and the evaluation ends as an
 * ExpressionFailure (EXPRESSION_TIMEOUT or EXPRESSION_FAILED) naming the limit. Anything else
 * (a thread that could not start, a full queue) rejects with a plain Error: an infrastructure
 * failure, worth another attempt.
 */
@Injectable()
export class ExpressionSandbox implements OnModuleDestroy {
  private readonly logger = new Logger('ExpressionSandbox');
  private readonly pool: Piscina<EvaluationTask, EvaluationAnswer>;
  private readonly heapMb: number;
  private readonly timeLimitMs: number;
  /** EXPRESSION_SANDBOX=inline: evaluated on this thread, for the benchmarks' comparison only. */
  private readonly inline: boolean;
  private readonly watchdog = new Watchdog(MAX_QUEUE + 64);

  constructor(config: AppConfig) {
    this.heapMb = config.expressions.heapMb;
    this.timeLimitMs = config.expressions.timeLimitMs;
    this.inline = config.expressions.inline;
    // Compiled: dist/.../sandbox-worker.js. From sources (ts-node, jest): Node strips the types itself.
    const filename = join(__dirname, `sandbox-worker${extname(__filename)}`);
    this.pool = new Piscina({
      filename,
      minThreads: this.inline ? 0 : config.expressions.threads,
      maxThreads: config.expressions.threads,
      maxQueue: MAX_QUEUE,
      idleTimeout: Number.POSITIVE_INFINITY,
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    // A thread that dies between tasks (one being stopped for its time limit may run out of
    // memory first) is reported here, not to a caller; the pool replaces it either way.
    this.pool.on('error', (error: Error) => this.logger.warn(`An expression thread ended: ${error.message}`));
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /** The result of `expression` over `input`, as JSON data (no result: null). */
  async evaluate(expression: string, input: unknown, options: EvaluateOptions): Promise<unknown> {
    const timeoutMs = Math.max(1, Math.floor(Math.min(this.timeLimitMs, options.timeoutMs ?? this.timeLimitMs)));
    options.signal?.throwIfAborted();
    const task = { expression, input, bindings: options.bindings, timeoutMs, maxOutputBytes: options.maxOutputBytes };
    if (this.inline) return answered(await evaluateInThisThread(task));
    const watched = this.watchdog.watch(timeoutMs + KILL_GRACE_MS);
    if (!watched) throw new Error('The expression sandbox is at its limit of evaluations in flight');
    // The caller's abort is passed on by hand: AbortSignal.any costs more than a small evaluation.
    const callerAborted = () => watched.abort();
    options.signal?.addEventListener('abort', callerAborted, { once: true });
    let answer: EvaluationAnswer;
    try {
      answer = await this.pool.run({ ...task, clock: watched.clock, slot: watched.slot }, { signal: watched.signal });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (watched.timedOut) {
        this.logger.warn(`An expression ran past ${timeoutMs} ms without yielding; its thread was stopped`);
        throw new ExpressionFailure('EXPRESSION_TIMEOUT', `${timeoutMessage(timeoutMs)}; its thread was stopped`);
      }
      if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        this.logger.warn(`An expression ran out of its ${this.heapMb} MB heap; its thread was stopped`);
        throw new ExpressionFailure(
          'EXPRESSION_FAILED',
          `Expression needed more than the memory limit of ${this.heapMb} MB; its thread was stopped`,
        );
      }
      throw error;
    } finally {
      options.signal?.removeEventListener('abort', callerAborted);
      watched.release();
    }
    return answered(answer);
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.destroy();
  }
}

function answered(answer: EvaluationAnswer): unknown {
  if (!answer.ok) throw new ExpressionFailure(answer.code, answer.message);
  return JSON.parse(answer.json) as unknown;
}

/**
 * Stops evaluations that run past their limit, counted from when a thread took them up: time
 * spent waiting for a free thread, or for a new one to boot, does not count. Each evaluation
 * in flight has a slot in one shared array where its thread writes when it started; one timer
 * looks them over, instead of a timer per evaluation.
 */
class Watchdog {
  private readonly started: BigInt64Array;
  private readonly free: number[];
  private readonly watched = new Map<number, Watched>();
  private timer?: NodeJS.Timeout;

  constructor(slots: number) {
    this.started = new BigInt64Array(new SharedArrayBuffer(8 * slots));
    this.free = Array.from({ length: slots }, (_, i) => slots - 1 - i);
  }

  /** A slot for an evaluation that may run `limitMs` once started; null when every slot is taken. */
  watch(limitMs: number): Watched | null {
    const slot = this.free.pop();
    if (slot === undefined) return null;
    Atomics.store(this.started, slot, 0n);
    const watched = new Watched(this.started, slot, limitMs, () => {
      if (!this.watched.delete(slot)) return;
      this.free.push(slot);
      if (!this.watched.size) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    });
    this.watched.set(slot, watched);
    this.timer ??= setInterval(() => this.check(), WATCHDOG_INTERVAL_MS).unref();
    return watched;
  }

  private check(): void {
    const now = Date.now();
    for (const [slot, watched] of this.watched) {
      const started = Number(Atomics.load(this.started, slot));
      if (started && now - started >= watched.limitMs) watched.expire();
    }
  }
}

/** One evaluation under the watchdog: its slot, and the signal that stops its thread. */
class Watched {
  private readonly controller = new AbortController();
  private expired = false;

  constructor(
    readonly clock: BigInt64Array,
    readonly slot: number,
    readonly limitMs: number,
    readonly release: () => void,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get timedOut(): boolean {
    return this.expired;
  }

  /** Stops it for the caller (its own signal aborted). */
  abort(): void {
    this.controller.abort();
  }

  /** Stops it for running past its limit. */
  expire(): void {
    if (this.controller.signal.aborted) return;
    this.expired = true;
    this.controller.abort();
  }
}
