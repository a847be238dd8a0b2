import type { ServerResponse } from 'node:http';
import { eventually } from './eventually';
import { RecordedRequest, startLoopbackServer } from './loopback-server';

/** One call the fake agent received. */
export interface RemoteCall extends RecordedRequest {
  /** Its Idempotency-Key header ('' without one). */
  key: string;
  /** Its number among the calls with this key, from 1. */
  nth: number;
  /** When it arrived (ms since epoch). */
  at: number;
  /** When it was answered; unset while it is held or in its delay, and for an aborted call. */
  answeredAt?: number;
}

/** Held: no answer until the caller hangs up, `dropHeld()` or `close()`. */
export const HOLD = Symbol('hold');

/** How a route answers a call: JSON `body` (default `{}`) with `status` (default 200), after `delayMs`; or HOLD. */
export type Answer = { status?: number; body?: unknown; delayMs?: number } | typeof HOLD;

export type Route = (call: RemoteCall) => Answer;

/** Answers `{ key }` (the call's Idempotency-Key) after `delayMs`. */
export const keyAfter =
  (delayMs: number): Route =>
  (call) => ({ body: { key: call.key }, delayMs });

/** Answers `failure` (503 `{}` by default) to the calls of a key before its `nth`, then 200 `{ calls: <n> }`. */
export const succeedsOnCall =
  (nth: number, failure: { status?: number; body?: unknown } = {}): Route =>
  (call) =>
    call.nth < nth ? { status: 503, ...failure } : { body: { calls: call.nth } };

export interface FakeRemoteAgent {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Every call by Idempotency-Key, in arrival order. */
  calls: Map<string, RemoteCall[]>;
  /** The keys of calls whose caller hung up before they were answered, in that order. */
  aborted: string[];
  /** How many calls are being answered now (arrived, neither answered nor aborted). */
  inFlight(): number;
  /** Resolves once at least one call is in flight; throws after `timeoutMs`. */
  callsInFlight(timeoutMs?: number): Promise<void>;
  /** Drops the connection of every held call. */
  dropHeld(): void;
  close(): Promise<void>;
}

/**
 * A remote agent (the far end of an `http.agent`) on 127.0.0.1, on a free port. Each request
 * is answered by the route of its path (`routes['/slow']`), 404 `{}` without one, and recorded
 * under its Idempotency-Key, as is a caller that hangs up before the answer.
 */
export async function startFakeRemoteAgent(routes: Record<string, Route>): Promise<FakeRemoteAgent> {
  const calls = new Map<string, RemoteCall[]>();
  const aborted: string[] = [];
  const held = new Set<ServerResponse>();
  let inFlight = 0;

  const server = await startLoopbackServer((req, res) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    const list = calls.get(key) ?? [];
    const call: RemoteCall = { ...req, key, nth: list.length + 1, at: Date.now() };
    list.push(call);
    calls.set(key, list);
    inFlight++;

    const route = routes[new URL(req.url, 'http://fake').pathname];
    const answer = route ? route(call) : { status: 404 };
    let timer: NodeJS.Timeout | undefined;
    res.on('close', () => {
      clearTimeout(timer);
      held.delete(res);
      if (res.writableEnded) return;
      inFlight--;
      aborted.push(key);
    });
    if (answer === HOLD) return void held.add(res);
    const send = () => {
      call.answeredAt = Date.now();
      inFlight--;
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body ?? {}));
    };
    if (answer.delayMs) timer = setTimeout(send, answer.delayMs);
    else send();
  });

  const dropHeld = () => {
    for (const res of held) res.destroy();
  };
  return {
    url: server.url,
    calls,
    aborted,
    inFlight: () => inFlight,
    async callsInFlight(timeoutMs = 10_000) {
      await eventually(() => inFlight > 0, { timeoutMs, intervalMs: 20, message: 'a call to the fake remote agent in flight' });
    },
    dropHeld,
    async close() {
      dropHeld();
      await server.close();
    },
  };
}
