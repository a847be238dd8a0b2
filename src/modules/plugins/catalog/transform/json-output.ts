import { ExecutionError } from '../../domain/plugin';

/** Largest output a transform may produce, serialized (1 MiB). */
export const MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * An evaluation result as plain JSON: no result becomes null; functions and oversized results
 * are INVALID_OUTPUT.
 */
export function toJsonOutput(result: unknown, maxBytes = MAX_OUTPUT_BYTES): unknown {
  const text = serialize(result ?? null);
  if (text === undefined) throw new ExecutionError('INVALID_OUTPUT', 'The expression did not produce JSON (a function?)');
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) throw new ExecutionError('INVALID_OUTPUT', `Output is ${bytes} bytes; the limit is ${maxBytes}`);
  return JSON.parse(text) as unknown;
}

/** undefined for what JSON cannot hold: a function, or a JSONata lambda (cyclic). */
function serialize(value: unknown): string | undefined {
  try {
    return JSON.stringify(value) as string | undefined;
  } catch {
    return undefined;
  }
}
