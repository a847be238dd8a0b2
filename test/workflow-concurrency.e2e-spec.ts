import { install } from './support/agents';
import { expectError } from './support/envelope';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

interface Concurrency {
  key: string;
  limit: number;
  waitsForPlace: boolean;
  reason: string | null;
}
interface RunBody {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
  concurrency: Concurrency | null;
  startedAt: string | null;
  finishedAt: string | null;
}

/** A run that holds its place while it sleeps a second, then ends. */
const NAP = [
  { id: 'nap', sleep: { seconds: 1 } },
  { id: 'done', action: 'transform.jsonata', with: { expression: '"done"' }, needs: ['nap'] },
];

// A workflow's concurrency as a user sees it: checked at save, runs beyond the limit queued,
// canceled or canceling the oldest, with the key and the reason on the run.
describe('workflow concurrency', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  const define = (definition: Record<string, unknown>) => t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
  const defined = async (concurrency: Record<string, unknown>, steps: unknown[] = NAP): Promise<string> => {
    const res = await define({ name: 'limited', steps, concurrency });
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    expect(res.body.concurrency).toEqual(concurrency);
    return res.body.id as string;
  };
  const start = async (workflowId: string, input: unknown = {}): Promise<RunBody> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input });
    // 200 for a run final at once (canceled by the limit).
    expect(res.status).toBe(res.body.status === 'canceled' ? 200 : 202);
    return res.body as RunBody;
  };
  const get = async (workflowId: string, runId: string): Promise<RunBody> => {
    const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
    expect(res.status).toBe(200);
    return res.body as RunBody;
  };
  const observe = (workflowId: string, runId: string, what: string, seen: (run: RunBody) => boolean) =>
    eventually(
      async () => {
        const run = await get(workflowId, runId);
        return seen(run) ? run : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 25, message: what },
    );
  const settled = (workflowId: string, runId: string) =>
    observe(workflowId, runId, `run ${runId} to finish`, (r) => !['queued', 'running', 'waiting'].includes(r.status));
  const sleeping = (workflowId: string, runId: string) =>
    observe(workflowId, runId, `run ${runId} to sleep`, (r) => r.status === 'waiting');

  describe('definition', () => {
    it.each<[string, Record<string, unknown>, string, RegExp]>([
      ['a limit of 0', { limit: 0 }, 'concurrency.limit', />= 1/],
      ['a limit above 1,000', { limit: 1001 }, 'concurrency.limit', /<= 1000/],
      ['no limit', { key: 'input.customer' }, 'concurrency', /limit/],
      ['an unknown onLimit', { limit: 1, onLimit: 'dropOldest' }, 'concurrency.onLimit', /allowed values|equal to one of/],
      ['an unknown field', { limit: 1, per: 'customer' }, 'concurrency.per', /additional properties/],
      ['a key that does not compile', { limit: 1, key: 'input.(' }, 'concurrency.key', /^concurrency.key: /],
      ['a key that reads a step', { limit: 1, key: 'steps.nap.output' }, 'concurrency.key', /before any step runs/],
    ])('refuses %s with its problem', async (_, concurrency, path, message) => {
      const res = await define({ name: 'bad', steps: NAP, concurrency });
      expectError(res, 400, 'WORKFLOW_INVALID', path);
      const problem = (res.body.error.details as Array<{ path: string; message: string }>).find((d) => d.path === path);
      expect(problem!.message).toMatch(message);
    });

    it('shows no concurrency on a workflow without one, and none on its runs', async () => {
      const res = await define({ name: 'free', steps: [{ id: 'done', action: 'transform.jsonata', with: { expression: '1' } }] });
      expect(res.body.concurrency).toBeNull();
      const run = await start(res.body.id as string);
      expect(run.concurrency).toBeNull();
    });
  });

  it('queues a run beyond the limit, with its key and why, while the first sleeps; it starts once that one ended', async () => {
    const workflowId = await defined({ limit: 1, key: 'input.customer' });
    const first = await start(workflowId, { customer: 'acme' });
    expect(first.concurrency).toEqual({ key: 'acme', limit: 1, waitsForPlace: false, reason: null });
    await sleeping(workflowId, first.id);
    const second = await start(workflowId, { customer: 'acme' });
    const third = await start(workflowId, { customer: 'acme' });
    // Another key goes at once.
    const other = await start(workflowId, { customer: 'globex' });
    expect(other.concurrency).toMatchObject({ key: 'globex', waitsForPlace: false });
    expect(second).toMatchObject({ status: 'queued', concurrency: { key: 'acme', limit: 1, waitsForPlace: true } });
    expect(second.concurrency!.reason).toMatch(/1 run\(s\) with the concurrency key 'acme' are in progress/);
    await sleeping(workflowId, other.id);
    // The first sleeps and keeps its place: the others still wait.
    expect(await get(workflowId, second.id)).toMatchObject({ status: 'queued', concurrency: { waitsForPlace: true } });

    const [a, b, c, o] = await Promise.all([first, second, third, other].map((r) => settled(workflowId, r.id)));
    for (const run of [a, b, c, o]) expect(run.status).toBe('succeeded');
    expect(b.concurrency).toMatchObject({ waitsForPlace: false, reason: null });
    // One at a time, oldest first.
    expect(Date.parse(b.startedAt!)).toBeGreaterThanOrEqual(Date.parse(a.finishedAt!));
    expect(Date.parse(c.startedAt!)).toBeGreaterThanOrEqual(Date.parse(b.finishedAt!));
    // The other key's run slept beside the first.
    expect(Date.parse(o.startedAt!)).toBeLessThan(Date.parse(a.finishedAt!));
  });

  it('cancels a new run beyond the limit with cancelNew, with the reason', async () => {
    const workflowId = await defined({ limit: 1, onLimit: 'cancelNew' });
    const first = await start(workflowId);
    expect(first.concurrency).toMatchObject({ key: '', waitsForPlace: false });
    await sleeping(workflowId, first.id);
    const refused = await start(workflowId);
    expect(refused).toMatchObject({ status: 'canceled', error: { code: 'CONCURRENCY_LIMIT' } });
    expect(refused.error!.message).toMatch(/1 run\(s\) with the concurrency key '' were in progress \(limit 1, onLimit cancelNew\)/);
    expect((await settled(workflowId, first.id)).status).toBe('succeeded');
    expect(await get(workflowId, refused.id)).toMatchObject({ status: 'canceled', startedAt: null });
  });

  it('cancels the oldest run in progress with cancelOldest, with the reason, and runs the new one', async () => {
    const workflowId = await defined({ limit: 1, onLimit: 'cancelOldest' });
    const oldest = await start(workflowId);
    await sleeping(workflowId, oldest.id);
    const newer = await start(workflowId);
    expect(newer.status).not.toBe('canceled');
    const canceled = await get(workflowId, oldest.id);
    expect(canceled).toMatchObject({ status: 'canceled', error: { code: 'CONCURRENCY_LIMIT' } });
    expect(canceled.error!.message).toBe(
      `Canceled for the newer run ${newer.id} with the concurrency key '' (limit 1, onLimit cancelOldest)`,
    );
    expect((await settled(workflowId, newer.id)).status).toBe('succeeded');
  });

  it('refuses a run whose key cannot be evaluated (400, with the reason), and records nothing', async () => {
    const workflowId = await defined({ limit: 1, key: 'input.customer' });
    const noValue = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
    expectError(noValue, 400, 'VALIDATION_FAILED', 'concurrency.key');
    expect(noValue.body.error.message).toMatch(/no value/);
    const tooLong = await t
      .http()
      .post(`/api/workflows/${workflowId}/run?wait=0`)
      .set(bearer(org.member))
      .send({ input: { customer: 'x'.repeat(201) } });
    expectError(tooLong, 400, 'VALIDATION_FAILED', 'concurrency.key');
    expect(tooLong.body.error.message).toMatch(/201 characters; at most 200/);
    const history = await t.http().get(`/api/workflows/${workflowId}/runs`).set(bearer(org.viewer));
    expect(history.body.data).toEqual([]);
  });

  it("keeps another organization's runs of the same key apart, and hides its runs", async () => {
    const other = await t.newOrg('enterprise');
    await install(t, other, 'transform');
    const mine = await defined({ limit: 1, key: '"shared"' });
    const theirs = await t
      .http()
      .post('/api/workflows')
      .set(bearer(other.admin))
      .send({ name: 'theirs', steps: NAP, concurrency: { limit: 1, key: '"shared"' } });
    const first = await start(mine);
    const res = await t.http().post(`/api/workflows/${theirs.body.id}/run?wait=0`).set(bearer(other.member)).send({ input: {} });
    expect(res.body.concurrency).toMatchObject({ key: 'shared', waitsForPlace: false });
    expectError(await t.http().get(`/api/workflows/${mine}/runs/${first.id}`).set(bearer(other.admin)), 404, 'RUN_NOT_FOUND');
    await settled(mine, first.id);
  });
});
