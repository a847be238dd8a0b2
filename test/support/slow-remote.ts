import { LoopbackServer, startLoopbackServer } from '../../src/modules/plugins/catalog/test-support/loopback-server';

export interface SlowRemote {
  server: LoopbackServer;
  /** Every call by Idempotency-Key, with when it arrived (ms since epoch). */
  calls: Map<string, number[]>;
  /** Resolves once at least one call is being answered (or after 10 s). */
  callsInFlight(): Promise<void>;
}

/**
 * A remote agent on loopback that answers `{ key }` (its Idempotency-Key) after `delayMs`, so
 * workers can be killed while calls are in flight, and that records every call it gets.
 */
export async function startSlowRemote(delayMs: number): Promise<SlowRemote> {
  let inFlight = 0;
  const calls = new Map<string, number[]>();
  const server = await startLoopbackServer((req, res) => {
    const key = String(req.headers['idempotency-key']);
    calls.set(key, [...(calls.get(key) ?? []), Date.now()]);
    inFlight++;
    const timer = setTimeout(() => {
      inFlight--;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ key }));
    }, delayMs);
    res.on('close', () => {
      if (!res.writableEnded) {
        clearTimeout(timer);
        inFlight--;
      }
    });
  });
  return {
    server,
    calls,
    async callsInFlight() {
      const deadline = Date.now() + 10_000;
      while (inFlight === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    },
  };
}
