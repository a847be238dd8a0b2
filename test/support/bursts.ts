import type { Response } from 'supertest';

/** Sends `count` authenticated requests, `concurrency` at a time; answers them in order. */
export async function burst(send: () => Promise<Response>, count: number, concurrency = 10): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < count; i += concurrency) {
    responses.push(...(await Promise.all(Array.from({ length: Math.min(concurrency, count - i) }, send))));
  }
  return responses;
}

export const statuses = (responses: Response[]) => ({
  ok: responses.filter((r) => r.status === 200).length,
  limited: responses.filter((r) => r.status === 429).length,
});
