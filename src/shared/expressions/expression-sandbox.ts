import { extname, join } from 'node:path';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Piscina } from 'piscina';
import { AppConfig } from '../../config/app-config';
import { FairGate, GateFullError } from '../fairness/fair-gate';
import { OrganizationShares } from '../fairness/organization-shares';
import evaluateInThisThread, { EvaluationAnswer, EvaluationTask, timeoutMessage } from './sandbox-worker';

/** After its time is up, an evaluation that has not answered gets this long before its thread is killed. */
const KILL_GRACE_MS = 100;
/** How often evaluations in flight are checked against their time limit. */
const WATCHDOG_INTERVAL_MS = 20;
/** How often an organization's share of the threads is read again (a tier change applies within this). */
const SHARE_REREAD_MS = 5_000;
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
  /** Whose expression it is: organizations take turns for the threads, each within its share. */
  organizationId: string;
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
 *
 * The threads are shared fairly: an organization holds at most its share of them (by tier, of
 * the cores less one; or ORG_MAX_EXPRESSIONS; always one fewer than there are threads), and
 * when a thread frees, the organizations with evaluations waiting take turns. One
 * organization's flood of slow mappings makes another's evaluation wait for a free thread at
 * most, never for the flood.
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
  private readonly gate: FairGate;
  private readonly threadCount: number;
  private readonly knownShares = new Map<string, { share: number; at: number }>();
  /** No organization may take every thread: one stays for the others (when there are two or more). */
  private readonly maxShare: number;
  /** What a tier's share is a share of: at most the cores less one, so a busy organization leaves a core to the rest. */
  private readonly shareBase: number;

  constructor(
    config: AppConfig,
    private readonly shares: OrganizationShares,
  ) {
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
      // The threads get only the runtime's own variables (NODE_*, and TS_NODE_* when run from
      // sources, so a thread compiles without type checks): no secret of the service is in reach.
      env: Object.fromEntries(Object.entries(process.env).filter(([name]) => /^(NODE|TS_NODE)_/.test(name))),
    });
    this.threadCount = config.expressions.threads;
    this.gate = new FairGate(this.threadCount, MAX_QUEUE);
    this.maxShare = Math.max(1, this.threadCount - 1);
    // Threads beyond the cores only share them: one organization's slow mappings on every core
    // would slow every other organization's evaluation (and the requests and jobs of the
    // service) as much as a wait would. ORG_MAX_EXPRESSIONS may still go up to maxShare.
    this.shareBase = Math.max(1, Math.min(this.maxShare, config.expressions.cores - 1));
    // A thread that dies between tasks (one being stopped for its time limit may run out of
    // memory first) is reported here, not to a caller; the pool replaces it either way.
    this.pool.on('error', (error: Error) => this.logger.warn(`An expression thread ended: ${error.message}`));
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /** Evaluations holding a thread now. */
  get evaluating(): number {
    return this.gate.inUse;
  }

  /** The result of `expression` over `input`, as JSON data (no result: null). */
  async evaluate(expression: string, input: unknown, options: EvaluateOptions): Promise<unknown> {
    const timeoutMs = Math.max(1, Math.floor(Math.min(this.timeLimitMs, options.timeoutMs ?? this.timeLimitMs)));
    options.signal?.throwIfAborted();
    const task = { expression, input, bindings: options.bindings, timeoutMs, maxOutputBytes: options.maxOutputBytes };
    if (this.inline) return answered(await evaluateInThisThread(task));
    const share = Math.min(this.maxShare, await this.shareOf(options.organizationId));
    let answer: EvaluationAnswer;
    try {
      answer = await this.gate.run(options.organizationId, share, () => this.inThread(task, timeoutMs, options.signal), options.signal);
    } catch (error) {
      if (error instanceof GateFullError)
        throw new Error('The expression sandbox is at its limit of evaluations waiting', { cause: error });
      throw error;
    }
    return answered(answer);
  }

  /**
   * The organization's share of the threads. Known ones answer at once, from what was read last
   * (read again in the background every few seconds), so no evaluation waits for the database.
   */
  private shareOf(organizationId: string): number | Promise<number> {
    const known = this.knownShares.get(organizationId);
    const read = () =>
      this.shares.limit(organizationId, 'expressions', this.shareBase).then((share) => {
        if (this.knownShares.size >= MAX_QUEUE) this.knownShares.clear();
        this.knownShares.set(organizationId, { share, at: Date.now() });
        return share;
      });
    if (!known) return read();
    if (Date.now() - known.at > SHARE_REREAD_MS) {
      known.at = Date.now();
      read().catch(() => undefined);
    }
    return known.share;
  }

  /** One evaluation on a thread of the pool, under the watchdog. */
  private async inThread(task: EvaluationTask, timeoutMs: number, signal: AbortSignal | undefined): Promise<EvaluationAnswer> {
    const watched = this.watchdog.watch(timeoutMs + KILL_GRACE_MS);
    if (!watched) throw new Error('The expression sandbox is at its limit of evaluations in flight');
    // The caller's abort is passed on by hand: AbortSignal.any costs more than a small evaluation.
    const callerAborted = () => watched.abort();
    signal?.addEventListener('abort', callerAborted, { once: true });
    try {
      return await this.pool.run({ ...task, clock: watched.clock, slot: watched.slot }, { signal: watched.signal });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
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
      signal?.removeEventListener('abort', callerAborted);
      watched.release();
    }
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
