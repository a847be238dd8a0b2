import { install } from './support/agents';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

/** Map steps: validation, a run over items, each item's record, paging and failures. */
describe('workflow map steps', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    await install(t, org, 'transform');
  });
  afterAll(() => t.close());

  const define = (definition: Record<string, unknown>) => t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await define(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const started = async (workflowId: string, input: unknown): Promise<string> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };
  const settled = (workflowId: string, runId: string) =>
    eventually(
      async () => {
        const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
        return ['queued', 'running', 'waiting'].includes(res.body.status) ? undefined : res.body;
      },
      { timeoutMs: 30_000, intervalMs: 100, message: `run ${runId} to finish` },
    );
  const step = (body: { steps: Array<{ id: string }> }, id: string) => body.steps.find((s) => s.id === id)! as Record<string, unknown>;

  describe('definition', () => {
    it.each([
      ['an over that does not compile', { over: 'items.(', step: jsonata('$') }, 'steps[0].map.over', 'map.over'],
      ['no step', { over: 'input' }, 'steps[0].map', 'step'],
      ['a step of no kind', { over: 'input', step: {} }, 'steps[0].map.step', 'it has none'],
      [
        'a switch inside',
        { over: 'input', step: { switch: { cases: [{ when: 'true', steps: ['x'] }] } } },
        'steps[0].map.step',
        "'switch' cannot be one",
      ],
      ['needs inside', { over: 'input', step: { ...jsonata('$'), needs: ['x'] } }, 'steps[0].map.step.needs', 'takes no needs'],
      ['a concurrency over 100', { over: 'input', step: jsonata('$'), concurrency: 101 }, 'steps[0].map.concurrency', '100'],
      [
        'an inner with that fails its schema',
        { over: 'input', step: { action: 'transform.jsonata', with: {} } },
        'steps[0].map.step.with',
        'expression',
      ],
    ])('refuses %s', async (_case, map, path, fragment) => {
      const res = await define({ name: 'bad map', steps: [{ id: 'each', map }] });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'WORKFLOW_INVALID', status: 400 });
      expect(res.body.error.details).toContainEqual({ path, message: expect.stringContaining(fragment) });
    });

    it('refuses an inner input that reads a step the map does not wait for', async () => {
      const res = await define({
        name: 'bad read',
        steps: [
          { id: 'first', ...jsonata('$') },
          { id: 'each', map: { over: 'input', step: { ...jsonata('$'), input: 'steps.first.output' } } },
        ],
      });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([
        {
          path: 'steps[1].map.step.input',
          message: "step 'each' map.step.input reads steps.first but does not wait for it: add 'first' to its needs",
        },
      ]);
    });
  });

  it('runs the inner step once per item, with item and index, and answers the outputs in order', async () => {
    const id = await defined({
      name: 'squares',
      steps: [
        {
          id: 'each',
          map: { over: 'input.numbers', step: { ...jsonata('{ "i": index, "sq": item * item }'), input: '$' }, concurrency: 4 },
        },
        { id: 'total', ...jsonata('$sum($.sq)'), needs: ['each'], input: 'steps.each.output' },
      ],
    });
    const numbers = Array.from({ length: 25 }, (_, i) => i + 1);
    const runId = await started(id, { numbers });

    const run = await settled(id, runId);

    expect(run.status).toBe('succeeded');
    expect(step(run, 'each')).toMatchObject({
      status: 'succeeded',
      input: numbers,
      output: numbers.map((n, i) => ({ i, sq: n * n })),
      items: { total: 25, succeeded: 25 },
    });
    expect(step(run, 'total').output).toBe(numbers.reduce((sum, n) => sum + n * n, 0));
  });

  it('pages the items of a map step in order, each with its record; another organization finds no run', async () => {
    const id = await defined({ name: 'pages', steps: [{ id: 'each', map: { over: 'input', step: jsonata('$ & "!"') } }] });
    const runId = await started(id, ['a', 'b', 'c', 'd', 'e']);
    await settled(id, runId);
    const url = `/api/workflows/${id}/runs/${runId}/steps/each/items`;

    const first = await t.http().get(`${url}?limit=2`).set(bearer(org.viewer));
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      expect.objectContaining({ index: 0, status: 'succeeded', attempts: 1, output: 'a!', error: null, finishedAt: expect.any(String) }),
      expect.objectContaining({ index: 1, output: 'b!' }),
    ]);
    const rest = await t.http().get(`${url}?limit=10&cursor=${first.body.nextCursor}`).set(bearer(org.viewer));
    expect(rest.body.data.map((i: { output: string }) => i.output)).toEqual(['c!', 'd!', 'e!']);
    expect(rest.body.nextCursor).toBeNull();

    const bad = await t.http().get(`${url}?cursor=nonsense`).set(bearer(org.viewer));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'cursor', message: expect.any(String) }] });
    const notMap = await t.http().get(`/api/workflows/${id}/runs/${runId}/steps/ghost/items`).set(bearer(org.viewer));
    expect(notMap.status).toBe(404);
    expect(notMap.body.error).toMatchObject({ code: 'STEP_NOT_FOUND', status: 404 });
    const foreign = await t.http().get(url).set(bearer(other.admin));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('RUN_NOT_FOUND');
  });

  it('fails the step with MAP_ITEM_FAILED on the first item that fails; with skipFailures it goes on, null in its place', async () => {
    const inner = jsonata('$ = 3 ? $error("three") : $ * 10');
    const strict = await defined({ name: 'strict', steps: [{ id: 'each', map: { over: 'input', step: inner } }] });
    const lenient = await defined({ name: 'lenient', steps: [{ id: 'each', map: { over: 'input', step: inner, skipFailures: true } }] });
    const [strictRun, lenientRun] = await Promise.all([started(strict, [1, 2, 3, 4]), started(lenient, [1, 2, 3, 4])]);

    const failed = await settled(strict, strictRun);
    expect(failed.status).toBe('failed');
    expect(step(failed, 'each')).toMatchObject({
      status: 'failed',
      error: { code: 'MAP_ITEM_FAILED', message: expect.stringContaining('Item 2 failed') },
    });
    // Concurrency 1: the items after the failed one never ran, and the run's end canceled them.
    expect(step(failed, 'each').items).toEqual({ total: 4, succeeded: 2, failed: 1, canceled: 1 });

    const succeeded = await settled(lenient, lenientRun);
    expect(succeeded.status).toBe('succeeded');
    expect(step(succeeded, 'each')).toMatchObject({ output: [10, 20, null, 40], items: { total: 4, succeeded: 3, failed: 1 } });
    const items = await t.http().get(`/api/workflows/${lenient}/runs/${lenientRun}/steps/each/items`).set(bearer(org.viewer));
    expect(items.body.data[2]).toMatchObject({ index: 2, status: 'failed', output: null, error: { code: expect.any(String) } });
  });

  it('fails with MAP_INVALID when over is not an array, and MAP_TOO_LARGE past 10,000 items', async () => {
    const id = await defined({ name: 'bounds', steps: [{ id: 'each', map: { over: 'input.over', step: jsonata('$') } }] });
    const [notArray, tooMany] = await Promise.all([
      started(id, { over: { a: 1 } }),
      started(id, { over: Array.from({ length: 10_001 }, () => 0) }),
    ]);
    expect(step(await settled(id, notArray), 'each').error).toEqual({
      code: 'MAP_INVALID',
      message: 'map.over gave an object, not an array',
    });
    expect(step(await settled(id, tooMany), 'each').error).toEqual({
      code: 'MAP_TOO_LARGE',
      message: 'map.over gave 10001 items; at most 10000 are allowed',
    });
  });

  it('sleeps per item without holding a worker, and ends once every item woke', async () => {
    const id = await defined({
      name: 'naps',
      steps: [{ id: 'each', map: { over: 'input', step: { sleep: { seconds: 1 } }, concurrency: 10 } }],
    });
    const runId = await started(id, [1, 2, 3]);
    const waiting = await eventually(
      async () => {
        const res = await t.http().get(`/api/workflows/${id}/runs/${runId}`).set(bearer(org.viewer));
        return res.body.status === 'waiting' ? res.body : undefined;
      },
      { timeoutMs: 10_000, message: 'the run to wait' },
    );
    expect(step(waiting, 'each')).toMatchObject({ status: 'waiting', resumeAt: expect.any(String), items: { total: 3, waiting: 3 } });

    const run = await settled(id, runId);
    expect(run.status).toBe('succeeded');
    expect(step(run, 'each').output).toEqual([
      expect.objectContaining({ until: expect.any(String) }),
      expect.anything(),
      expect.anything(),
    ]);
  });
});
