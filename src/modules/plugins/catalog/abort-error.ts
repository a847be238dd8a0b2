import { ExecutionError } from '../domain/plugin';

/**
 * The error for an aborted `ExecuteRequest.signal`: AGENT_TIMEOUT when the signal was aborted
 * because time ran out (a `TimeoutError` reason, as `AbortSignal.timeout` gives), CANCELED
 * otherwise. An ExecutionError given as the reason is used as is.
 */
export function abortError(signal: AbortSignal): ExecutionError {
  const reason: unknown = signal.reason;
  if (reason instanceof ExecutionError) return reason;
  if (typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError') {
    return new ExecutionError('AGENT_TIMEOUT', 'The execution ran out of time');
  }
  return new ExecutionError('CANCELED', 'The execution was canceled');
}
