import { JobQueue } from './job-queue';
import { Signals } from './signals';

export interface Awaited<T> {
  /** The record as the enqueueing transaction left it. */
  record: T;
  /** Made by this request (its job is new), rather than found under an idempotency key. */
  created: boolean;
  queue: string;
  /** Signal topic announcing the record's final status. */
  finished: string;
  id: string;
  waitSeconds: number;
  isFinal: (record: T) => boolean;
  read: () => Promise<T | null>;
}

/**
 * The `?wait=` of execute and run: wakes a worker for a new record and waits up to
 * `waitSeconds` for its final status. It listens before the worker is woken, so the signal
 * cannot come first, and a new record needs no first read. Answers the record as it then stands.
 */
export async function awaitFinal<T>(signals: Signals, queue: JobQueue, a: Awaited<T>): Promise<T> {
  if (a.isFinal(a.record) || a.waitSeconds === 0) {
    if (a.created) queue.wake(a.queue);
    return a.record;
  }
  let read = !a.created;
  const finished = signals.waitFor(a.finished, a.id, a.waitSeconds * 1000, async () => {
    if (!read) {
      read = true;
      return null;
    }
    const current = await a.read();
    return current && a.isFinal(current) ? current : null;
  });
  if (a.created) queue.wake(a.queue);
  return (await finished) ?? (await a.read()) ?? a.record;
}
