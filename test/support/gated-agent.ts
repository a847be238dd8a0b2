import type { ServerResponse } from 'node:http';
import { eventually } from './eventually';
import { LoopbackServer, sendJson, startLoopbackServer } from './loopback-server';

/** A remote agent whose calls are held until the spec answers them, by Idempotency-Key (`<runId>:<stepId>` for a step). */
export interface GatedAgent {
  server: LoopbackServer;
  held: Map<string, ServerResponse>;
  /** Answers the held call of `key` (once it came) with `{ step: key }`. */
  release(key: string): Promise<void>;
}

export async function startGatedAgent(): Promise<GatedAgent> {
  const held = new Map<string, ServerResponse>();
  const server = await startLoopbackServer((req, res) => held.set(String(req.headers['idempotency-key']), res));
  return {
    server,
    held,
    async release(key) {
      const res = await eventually(async () => held.get(key), { timeoutMs: 10_000, message: `a call of ${key}` });
      held.delete(key);
      sendJson(res, 200, { step: key });
    },
  };
}
