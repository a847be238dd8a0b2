export interface EventuallyOptions {
  /** How long to keep asking, in ms. Default 10 s. */
  timeoutMs?: number;
  /** The pause between two checks, in ms. Default 50 ms. */
  intervalMs?: number;
  /**
   * What is awaited, for the error on timeout ("execution 42 to finish"). A function is called
   * only then, so it can describe the last state it saw.
   */
  message?: string | (() => string);
}

/**
 * Calls `check` until it answers a truthy value, and answers that value. `check` runs once more
 * at the deadline; if it still answers something falsy, throws `Timed out after <timeoutMs> ms
 * waiting for <message>`. An error thrown by `check` ends the wait at once.
 */
export async function eventually<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: EventuallyOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 50, message = 'a condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    const left = deadline - Date.now();
    if (left <= 0) {
      const what = typeof message === 'function' ? message() : message;
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, left)));
  }
}
