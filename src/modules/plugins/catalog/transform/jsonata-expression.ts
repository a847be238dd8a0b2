import jsonata from 'jsonata';
import { ExecutionError } from '../../domain/plugin';
import { abortError } from '../abort-error';
import { guardEvaluation } from './jsonata-guard';

/** Longest evaluation allowed, whatever the request's own timeout (ms). */
export const JSONATA_TIMEOUT_MS = 1000;
/**
 * JSONata's `stack` guard counts evaluation frames in flight, which includes the siblings of
 * an array or object constructor (evaluated concurrently: a 200-key object peaks at ~400),
 * so the bound is set well above what wide mappings reach. Non-tail recursion costs ~3
 * frames a level; tail calls are optimized away and only the time bound stops them.
 */
export const JSONATA_MAX_DEPTH = 2000;

export interface EvaluateOptions {
  signal: AbortSignal;
  /** Capped at JSONATA_TIMEOUT_MS. */
  timeoutMs: number;
  bindings?: Record<string, unknown>;
}

/** Checks that an expression compiles, for validation before it is stored. */
export function compileJsonata(expression: string): { ok: true } | { ok: false; message: string } {
  try {
    jsonata(expression);
    return { ok: true };
  } catch (error) {
    return { ok: false, message: describe(error) };
  }
}

/**
 * Evaluates a JSONata expression over `input`, bounded in time, depth and by the signal.
 * Failures are ExecutionErrors: EXPRESSION_FAILED (does not compile, fails, or nests too
 * deep), AGENT_TIMEOUT, or CANCELED.
 */
export async function evaluateJsonata(expression: string, input: unknown, options: EvaluateOptions): Promise<unknown> {
  const timeoutMs = Math.max(1, Math.min(JSONATA_TIMEOUT_MS, Math.floor(options.timeoutMs)));
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(expression, { timeout: timeoutMs, stack: JSONATA_MAX_DEPTH });
  } catch (error) {
    throw new ExecutionError('EXPRESSION_FAILED', `Invalid expression: ${describe(error)}`);
  }
  if (options.signal.aborted) throw abortError(options.signal);
  guardEvaluation(compiled, options.signal);
  try {
    return (await compiled.evaluate(input, options.bindings)) as unknown;
  } catch (error) {
    if (options.signal.aborted) throw abortError(options.signal);
    const { code } = innermost(error);
    if (code === 'D1012') throw new ExecutionError('AGENT_TIMEOUT', `Expression did not finish within ${timeoutMs} ms`);
    if (code === 'D1011') {
      throw new ExecutionError('EXPRESSION_FAILED', `Expression nested too deep (over ${JSONATA_MAX_DEPTH} frames): ${describe(error)}`);
    }
    throw new ExecutionError('EXPRESSION_FAILED', `Expression failed: ${describe(error)}`);
  }
}

/** JSONata throws plain objects: `{ code, position, token, message }`. */
interface JsonataFailure {
  code?: string;
  position?: number;
  message?: string;
  /** Set on D3120/D3121, the errors `$eval` wraps around the inner expression's. */
  error?: unknown;
}

function asFailure(error: unknown): JsonataFailure {
  return typeof error === 'object' && error !== null ? (error as JsonataFailure) : { message: String(error) };
}

function innermost(error: unknown): JsonataFailure {
  let failure = asFailure(error);
  while ((failure.code === 'D3120' || failure.code === 'D3121') && failure.error) failure = asFailure(failure.error);
  return failure;
}

function describe(error: unknown): string {
  const { code, position, message } = asFailure(error);
  const where = typeof position === 'number' ? ` at position ${position}` : '';
  return code ? `${message ?? 'error'} (JSONata ${code}${where})` : (message ?? 'error');
}
