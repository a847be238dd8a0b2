import { TransactionHost } from '@nestjs-cls/transactional';

interface Entry<V> {
  at: number;
  value: Promise<V>;
  settled: boolean;
  /** Started inside a transaction: it runs on that transaction's connection. */
  inTransaction: boolean;
}

/** Whether the caller runs inside a transaction; false where no TransactionHost exists (a unit spec). */
export function inTransaction(): boolean {
  try {
    return TransactionHost.getInstance().isTransactionActive();
  } catch {
    return false;
  }
}

/**
 * Reads from the database whose answers are kept for `ttlMs`, one read per key shared by the
 * callers that ask while it runs. A read that fails is not kept.
 *
 * One rule keeps the sharing from deadlocking: a caller inside a transaction does not wait for
 * a read that started outside one and has not answered yet. That read may be waiting for a
 * connection the transaction holds (the only one, on embedded PGlite; the last of a full pool
 * on a server), and the transaction would wait for it until the pool gives up (5 s); the caller
 * reads on its own connection instead.
 */
export class SharedReads<K, V> {
  private readonly entries = new Map<K, Entry<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly read: (key: K) => Promise<V>,
    private readonly callerInTransaction: () => boolean = inTransaction,
  ) {}

  get(key: K): Promise<V> {
    const entry = this.entries.get(key);
    if (entry && Date.now() - entry.at < this.ttlMs) {
      if (entry.settled || entry.inTransaction || !this.callerInTransaction()) return entry.value;
      return this.read(key);
    }
    const fresh: Entry<V> = { at: Date.now(), value: this.read(key), settled: false, inTransaction: this.callerInTransaction() };
    this.entries.set(key, fresh);
    fresh.value.then(
      () => (fresh.settled = true),
      () => {
        if (this.entries.get(key) === fresh) this.entries.delete(key);
      },
    );
    return fresh.value;
  }

  forget(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
