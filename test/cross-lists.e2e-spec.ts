import type { Response } from 'supertest';
import { install, registerAgent } from './support/agents';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { expectError } from './support/envelope';

/**
 * GET /api/executions and GET /api/runs: an organization's executions and runs across agents
 * and workflows, paged and filtered as the per-resource lists are (one repository method).
 */
const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

interface Listed {
  id: string;
  status: string;
  createdAt: string;
  steps?: unknown;
}

describe('cross lists', () => {
  let t: TestApp;
  let a: TestOrg;
  let b: TestOrg;
  // Organization A: two agents (one fails) and two workflows (one fails), items created in order.
  const mine = { executions: [] as string[], runs: [] as string[] };
  let upper: string;
  let failing: string;
  let workflow: string;
  let failingWorkflow: string;
  let cut: string;
  const after = { executions: [] as string[], runs: [] as string[] };
  const failed = { executions: '', runs: '' };
  // Organization B's agent, workflow and items.
  const theirs = { agent: '', workflow: '', execution: '', run: '' };

  const execute = async (org: TestOrg, agentId: string, text: string): Promise<Listed> => {
    const res = await t.http().post(`/api/agents/${agentId}/execute`).set(bearer(org.member)).send({ input: { text } });
    if (res.status !== 200) throw new Error(`execute: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Listed;
  };
  const run = async (org: TestOrg, workflowId: string, n: number): Promise<Listed> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run`).set(bearer(org.member)).send({ input: { n } });
    if (res.status !== 200) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Listed;
  };
  const define = async (org: TestOrg, expression: string): Promise<string> => {
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({ name: 'wf', steps: [{ id: 'a', ...jsonata(expression) }] });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const key = async (org: TestOrg, scopes: string[]): Promise<string> => {
    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'reader', role: 'viewer' });
    if (account.status !== 201) throw new Error(`service account: ${account.status} ${JSON.stringify(account.body)}`);
    const created = await t
      .http()
      .post(`/api/service-accounts/${account.body.id}/api-keys`)
      .set(bearer(org.admin))
      .send({ name: 'k', scopes });
    if (created.status !== 201) throw new Error(`key: ${created.status} ${JSON.stringify(created.body)}`);
    return created.body.key as string;
  };

  beforeAll(async () => {
    t = await createTestApp();
    [a, b] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    for (const org of [a, b]) await install(t, org, 'transform');
    upper = await registerAgent(t, a, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
    failing = await registerAgent(t, a, { kind: 'transform.jsonata', config: { expression: '$error("boom")' }, maxAttempts: 1 });
    workflow = await define(a, 'input.n + 1');
    failingWorkflow = await define(a, '$error("boom")');
    theirs.agent = await registerAgent(t, b, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });
    theirs.workflow = await define(b, 'input.n');
    theirs.execution = (await execute(b, theirs.agent, 'b')).id;
    theirs.run = (await run(b, theirs.workflow, 0)).id;

    for (let i = 0; i < 3; i++) mine.executions.push((await execute(a, upper, `e${i}`)).id);
    for (let i = 0; i < 3; i++) mine.runs.push((await run(a, workflow, i)).id);
    cut = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    const failedExecution = await execute(a, failing, 'x');
    expect(failedExecution.status).toBe('failed');
    const failedRun = await run(a, failingWorkflow, 0);
    expect(failedRun.status).toBe('failed');
    failed.executions = failedExecution.id;
    failed.runs = failedRun.id;
    after.executions = [failedExecution.id, (await execute(a, upper, 'late')).id];
    after.runs = [failedRun.id, (await run(a, workflow, 9)).id];
    mine.executions.push(...after.executions);
    mine.runs.push(...after.runs);
  });
  afterAll(() => t.close());

  const cases = [
    { list: 'executions', path: '/api/executions', by: 'agentId', scope: 'agents:read' },
    { list: 'runs', path: '/api/runs', by: 'workflowId', scope: 'workflows:read' },
  ] as const;

  describe.each(cases)('GET $path', ({ list, path, by, scope }) => {
    const one = () => (list === 'executions' ? upper : workflow);
    const failingOne = () => (list === 'executions' ? failing : failingWorkflow);
    const ids = (res: Response) => (res.body.data as Listed[]).map((item) => item.id);
    const get = (query = '', org: TestOrg = a) => t.http().get(`${path}${query}`).set(bearer(org.viewer));

    it("answers the organization's items of every resource, newest first, and no other organization's", async () => {
      const res = await get('?limit=100');
      expect(res.status).toBe(200);
      expect(res.body.nextCursor).toBeNull();
      expect(ids(res)).toEqual([...mine[list]].reverse());
      if (list === 'runs') for (const item of res.body.data as Listed[]) expect(item.steps).toBeUndefined();

      const other = await get('?limit=100', b);
      expect(ids(other)).toEqual([list === 'executions' ? theirs.execution : theirs.run]);
      // B's resource named as a filter by A finds nothing, and A's by B nothing either.
      const foreignId = list === 'executions' ? theirs.agent : theirs.workflow;
      expect(await get(`?${by}=${foreignId}`)).toMatchObject({ status: 200, body: { data: [], nextCursor: null } });
      expect(await get(`?${by}=${one()}`, b)).toMatchObject({ status: 200, body: { data: [], nextCursor: null } });
    });

    it(`filters by ${by}, status and since, together too`, async () => {
      const ofOne = await get(`?${by}=${one()}`);
      expect(ids(ofOne)).toEqual(mine[list].filter((id) => id !== failed[list]).reverse());
      expect(ids(await get(`?${by}=${failingOne()}`))).toEqual([failed[list]]);
      expect(ids(await get('?status=failed'))).toEqual([failed[list]]);
      expect(ids(await get(`?since=${cut}`))).toEqual([...after[list]].reverse());
      expect(ids(await get(`?since=${cut}&status=succeeded&${by}=${one()}`))).toEqual([after[list][1]]);
      expect(ids(await get(`?status=canceled`))).toEqual([]);
    });

    it('filters by until (before it) and finds one item by its id, in the organization only', async () => {
      expect(ids(await get(`?until=${cut}&limit=100`))).toEqual(mine[list].filter((id) => !after[list].includes(id)).reverse());
      expect(ids(await get(`?since=${cut}&until=${cut}`))).toEqual([]);
      expect(ids(await get(`?id=${failed[list]}`))).toEqual([failed[list]]);
      expect(ids(await get(`?id=${failed[list]}&status=succeeded`))).toEqual([]);
      const theirsId = list === 'executions' ? theirs.execution : theirs.run;
      expect(await get(`?id=${theirsId}`)).toMatchObject({ status: 200, body: { data: [], nextCursor: null } });
      expectError(await get('?id=nope'), 400, 'VALIDATION_FAILED');
      expectError(await get('?until=tomorrow'), 400, 'VALIDATION_FAILED');
    });

    it('pages with a cursor without duplicates or gaps', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Response = await get(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        expect((page.body.data as Listed[]).length).toBeLessThanOrEqual(2);
        seen.push(...ids(page));
        cursor = page.body.nextCursor as string | null;
      } while (cursor);
      expect(seen).toEqual([...mine[list]].reverse());
      // A cursor with a filter keeps the filter.
      const first = await get(`?${by}=${one()}&limit=1`);
      const second = await get(`?${by}=${one()}&limit=1&cursor=${first.body.nextCursor}`);
      expect([...ids(first), ...ids(second)]).toEqual(
        mine[list]
          .filter((id) => id !== failed[list])
          .reverse()
          .slice(0, 2),
      );
    });

    // The query checks and who may call (roles, scopes) are in the controllers' specs
    // (executions.controller.spec.ts, runs.controller.spec.ts); here, what needs the data.
    it('answers 400 in the error envelope for a forged cursor', async () => {
      expectError(await get('?cursor=nope'), 400, 'VALIDATION_FAILED');
    });

    it(`lists the same for a real API key with ${scope}`, async () => {
      const reader = await key(a, [scope]);
      const allowed = await t
        .http()
        .get(`${path}?limit=100`)
        .set(bearer({ token: reader }));
      expect(allowed.status).toBe(200);
      expect(ids(allowed)).toEqual([...mine[list]].reverse());
    });
  });
});
