import type { Response } from 'supertest';

/**
 * The answer is the error envelope and nothing else: `{"error":{"code","message","status"}}`,
 * with `details` only when the error has them, the status in the body the HTTP status. With
 * `path`, a detail names that field.
 */
export function expectError(res: Response, status: number, code: string, path?: string): void {
  const error = (res.body as { error?: Record<string, unknown> } | undefined)?.error ?? {};
  expect({ status: res.status, body: res.body as unknown }).toEqual({
    status,
    body: { error: { code, message: expect.any(String), status, ...('details' in error ? { details: expect.any(Array) } : {}) } },
  });
  if (path) expect(error.details).toContainEqual(expect.objectContaining({ path }));
}
