/** Work of one organization, waiting for a slot. */
interface Waiter {
  admit: () => void;
}

interface Tenant {
  running: number;
  /** What it may hold, as its latest caller said. */
  limit: number;
  /** When it last got a slot (a sequence number): among equals, the one served longest ago goes first. */
  lastServed: number;
  waiting: Waiter[];
}

export class GateFullError extends Error {
  override name = 'GateFullError';
}

/**
 * Admits work of many organizations to `capacity` slots: at most `limit` of one
 * organization's at once, and when a slot frees, it goes to the waiting organization that
 * holds the fewest (in turn among equals), whatever order their work arrived in. So one organization that queues
 * a thousand evaluations makes another's single one wait for at most the slots it holds, not
 * for its queue.
 */
export class FairGate {
  private running = 0;
  private waitingTotal = 0;
  private served = 0;
  private readonly tenants = new Map<string, Tenant>();
  /** Organizations with work waiting. */
  private readonly turns: string[] = [];

  constructor(
    private readonly capacity: number,
    /** Work waiting across organizations beyond which more is refused (GateFullError). */
    private readonly maxWaiting = 10_000,
  ) {}

  /** Slots taken now. */
  get inUse(): number {
    return this.running;
  }

  /**
   * Runs `work` once the organization's turn comes and it holds fewer than `limit` slots;
   * `signal` gives up the wait (rejecting with its reason).
   */
  async run<T>(organizationId: string, limit: number, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(organizationId, limit, signal);
    try {
      return await work();
    } finally {
      this.release(organizationId);
    }
  }

  private acquire(organizationId: string, limit: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const tenant = this.tenant(organizationId);
    tenant.limit = Math.max(1, limit);
    if (!tenant.waiting.length && this.mayStart(tenant)) {
      this.start(tenant);
      return Promise.resolve();
    }
    if (this.waitingTotal >= this.maxWaiting) {
      throw new GateFullError(`${this.maxWaiting} are already waiting for a slot`);
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = tenant.waiting.indexOf(waiter);
        if (at < 0) return;
        tenant.waiting.splice(at, 1);
        this.waitingTotal--;
        if (!tenant.waiting.length) this.leaveTurns(organizationId);
        this.forgetIfIdle(organizationId, tenant);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      tenant.waiting.push(waiter);
      this.waitingTotal++;
      if (tenant.waiting.length === 1) this.turns.push(organizationId);
    });
  }

  private release(organizationId: string): void {
    const tenant = this.tenants.get(organizationId)!;
    tenant.running--;
    this.running--;
    this.dispatch();
    this.forgetIfIdle(organizationId, tenant);
  }

  /**
   * Hands free slots to waiting organizations: first to the one holding the fewest (so one that
   * holds many waits for those that hold none), and among equals to the one served longest ago.
   */
  private dispatch(): void {
    while (this.running < this.capacity) {
      let next = -1;
      for (let i = 0; i < this.turns.length; i++) {
        const tenant = this.tenants.get(this.turns[i])!;
        if (this.mayStart(tenant) && (next < 0 || goesBefore(tenant, this.tenants.get(this.turns[next])!))) next = i;
      }
      if (next < 0) return;
      const [organizationId] = this.turns.splice(next, 1);
      const tenant = this.tenants.get(organizationId)!;
      this.start(tenant);
      this.waitingTotal--;
      tenant.waiting.shift()!.admit();
      if (tenant.waiting.length) this.turns.push(organizationId);
    }
  }

  private mayStart(tenant: Tenant): boolean {
    return this.running < this.capacity && tenant.running < tenant.limit;
  }

  private start(tenant: Tenant): void {
    tenant.lastServed = ++this.served;
    tenant.running++;
    this.running++;
  }

  private tenant(organizationId: string): Tenant {
    let tenant = this.tenants.get(organizationId);
    if (!tenant) this.tenants.set(organizationId, (tenant = { running: 0, limit: 1, lastServed: 0, waiting: [] }));
    return tenant;
  }

  private forgetIfIdle(organizationId: string, tenant: Tenant): void {
    if (tenant.running === 0 && !tenant.waiting.length) this.tenants.delete(organizationId);
  }

  private leaveTurns(organizationId: string): void {
    const at = this.turns.indexOf(organizationId);
    if (at >= 0) this.turns.splice(at, 1);
  }
}

function goesBefore(a: Tenant, b: Tenant): boolean {
  return a.running < b.running || (a.running === b.running && a.lastServed < b.lastServed);
}
