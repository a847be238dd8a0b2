interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the items added during one turn of the event loop and hands them to `flush`
 * together: many small writes that happen at once become one statement. `flush` answers
 * one result per item, in order.
 */
export class Coalescer<T, R> {
  private pending: Array<Pending<T, R>> = [];

  constructor(private readonly flush: (items: T[]) => Promise<R[]>) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.pending.push({ item, resolve, reject }) === 1) setImmediate(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    try {
      const results = await this.flush(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  }
}
