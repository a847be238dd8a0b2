import { OutboundError } from './outbound-http.types';

/**
 * Runs `work` under one signal that aborts when `timeoutMs` has passed (TIMEOUT) or the
 * caller's signal fires (ABORTED); the signal's reason is always that OutboundError.
 */
export async function withDeadline<T>(timeoutMs: number, callerSignal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>) {
  if (callerSignal?.aborted) throw aborted();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new OutboundError('TIMEOUT', `No complete answer within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = () => controller.abort(aborted());
  callerSignal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onAbort);
  }
}

function aborted(): OutboundError {
  return new OutboundError('ABORTED', 'The request was aborted');
}
