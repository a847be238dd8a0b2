/**
 * Settles like `work`, or rejects with the signal's reason as soon as it aborts (work that
 * ignores the signal is left behind). The work is handled whatever happens: work that fails
 * after the abort, or that was handed over with the signal already aborted, fails into
 * nothing instead of ending the process as an unhandled rejection.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
