import { extname, join } from 'node:path';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Piscina } from 'piscina';
import { AppConfig } from '../../config/app-config';
import evaluateInThisThread, { EvaluationAnswer, EvaluationTask, timeoutMessage } from './sandbox-worker';

/** After its time is up, an evaluation that has not answered gets this long before its thread is killed. */
const KILL_GRACE_MS = 100;
/** How often a task still waiting for a thread is looked at again. */
const QUEUED_RECHECK_MS = 20;
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
    const startedAt = new BigInt64Array(new SharedArrayBuffer(8));
    const deadline = killAfter(startedAt, timeoutMs + KILL_GRACE_MS);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
    let answer: EvaluationAnswer;
    try {
      answer = await this.pool.run({ ...task, startedAt }, { signal });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (deadline.signal.aborted) {
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
      deadline.clear();
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
 * A signal that aborts `limitMs` after the thread took the task up (`startedAt`, written by
 * the thread): time spent waiting for a free thread, or for a new one to boot, does not count.
 */
function killAfter(startedAt: BigInt64Array, limitMs: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  let timer: NodeJS.Timeout;
  const check = () => {
    const started = Number(Atomics.load(startedAt, 0));
    const left = started ? started + limitMs - Date.now() : QUEUED_RECHECK_MS;
    if (started && left <= 0) controller.abort();
    else timer = setTimeout(check, left);
  };
  timer = setTimeout(check, limitMs);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
