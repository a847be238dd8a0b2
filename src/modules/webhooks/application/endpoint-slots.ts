/** Deliveries in flight to one healthy endpoint from one process. */
export const MAX_PER_ENDPOINT = 8;
/** Endpoints whose window this process remembers (a full map is forgotten at once). */
const REMEMBERED = 10_000;

interface Window {
  inFlight: number;
  /** Additive increase after an answer, halved after a request that got none (a timeout, a refused connection). */
  limit: number;
  waiting: Array<() => void>;
}

/**
 * Deliveries in flight per endpoint in this process, with a window that backs off: an endpoint
 * that answers keeps up to MAX_PER_ENDPOINT; one whose requests time out or fail to connect
 * gets half as many each time (down to one), and one more with each answer. A delivery to an
 * endpoint at its limit waits for a slot (its job counts against the organization's share of
 * the workers, so the wait holds up only that organization).
 */
export class EndpointSlots {
  private readonly windows = new Map<string, Window>();

  /** A release for a slot to the endpoint, once one is free. */
  async acquire(endpointId: string): Promise<() => void> {
    const window = this.window(endpointId);
    while (window.inFlight >= window.limit) await new Promise<void>((resolve) => window.waiting.push(resolve));
    window.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      window.inFlight--;
      window.waiting.shift()?.();
    };
  }

  /** What a request to the endpoint got: an answer (any status) or none. */
  record(endpointId: string, answered: boolean): void {
    const window = this.window(endpointId);
    window.limit = answered ? Math.min(MAX_PER_ENDPOINT, window.limit + 1) : Math.max(1, Math.floor(window.limit / 2));
  }

  /** The endpoint's current limit (for tests and logs). */
  limitOf(endpointId: string): number {
    return this.windows.get(endpointId)?.limit ?? MAX_PER_ENDPOINT;
  }

  private window(endpointId: string): Window {
    let window = this.windows.get(endpointId);
    if (!window) {
      if (this.windows.size >= REMEMBERED) this.forgetIdle();
      this.windows.set(endpointId, (window = { inFlight: 0, limit: MAX_PER_ENDPOINT, waiting: [] }));
    }
    return window;
  }

  private forgetIdle(): void {
    for (const [id, window] of this.windows) if (window.inFlight === 0 && !window.waiting.length) this.windows.delete(id);
  }
}
