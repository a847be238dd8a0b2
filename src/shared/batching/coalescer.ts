interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export interface CoalescerOptions {
  /**
   * Flushes under way at once at most. While that many are, what is added waits and goes with
   * the next flush (group commit: under load, one statement carries what arrived during the
   * last). Unbounded by default: every turn's items are flushed at once.
   */
  maxInFlight?: number;
}

/**
 * Gathers the items added during one turn of the event loop and hands them to `flush`
 * together: many small writes that happen at once become one statement. `flush` answers
 * one result per item, in order.
 */
export class Coalescer<T, R> {
  private pending: Array<Pending<T, R>> = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly maxInFlight: number;

  constructor(
    private readonly flush: (items: T[]) => Promise<R[]>,
    options: CoalescerOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? Infinity;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** A flush at the end of this turn, unless one is due already or the flushes under way are at their limit. */
  private schedule(): void {
    if (this.scheduled || !this.pending.length || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.inFlight >= this.maxInFlight) return;
    const batch = this.pending;
    this.pending = [];
    if (!batch.length) return;
    this.inFlight++;
    try {
      const results = await this.flush(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (error) {
      for (const p of batch) p.reject(error);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
