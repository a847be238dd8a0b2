import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { install, registerAgent } from './support/agents';
import { createTestApp, TestApp } from './support/test-app';
import { fuzz, FuzzRequest, FuzzResponse } from './fuzz/openapi-fuzz';

/**
 * The short run of the OpenAPI fuzzer (fixed seed, a few hundred requests): no 5xx, every error
 * in the envelope. `npm run fuzz` is the long run against a started service.
 */
describe('OpenAPI fuzz (short run)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_ENABLED: 'false' } });
  });
  afterAll(() => t.close());

  it('answers 400 requests of every operation without a 5xx, every error in the envelope', async () => {
    const org = await t.newOrg('enterprise');
    const operator = await t.addUser(org.id, 'admin', { isOperator: true });
    const victim = await t.addUser(org.id, 'member');
    await install(t, org, 'transform');
    const agent = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$' } });
    const send = async (req: FuzzRequest): Promise<FuzzResponse> => {
      const agentOf = request(t.app.getHttpServer()) as unknown as Record<string, (path: string) => request.Test>;
      const call = agentOf[req.method.toLowerCase()](req.path).query(req.query).set(req.headers);
      const res = req.body === undefined ? await call : await call.send(req.body);
      return { status: res.status, contentType: String(res.headers['content-type'] ?? ''), text: res.text ?? '' };
    };
    const document = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8'));
    const figures = await fuzz(
      document,
      {
        tokens: { admin: org.admin.token, operator: operator.token },
        known: { ids: [agent, victim.id, org.id], orgSlugs: [org.slug] },
        send,
      },
      { seed: 20261126, numRuns: 400 },
    );
    expect(figures.requests).toBe(400);
    expect(Object.keys(figures.byStatus).filter((status) => Number(status) >= 500)).toEqual([]);
  }, 120_000);
});
