import { randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import { install, registerAgent } from './support/agents';
import { eventually } from './support/eventually';
import { untilJobDone } from './support/queue-job';
import { FakeRemoteAgent, HOLD, keyAfter, startFakeRemoteAgent, succeedsOnCall } from './support/fake-remote-agent';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const jsonata = (expression: string) => ({ action: 'transform.jsonata', with: { expression } });

// Enterprise organizations: these specs make more requests than the starter budget allows.
describe('workflows', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let remote: FakeRemoteAgent;
  let slow: string;
  let hang: string;
  let flaky: string;
  let failing: string;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({
      '/slow': keyAfter(400),
      '/flaky': succeedsOnCall(3),
      '/fail': () => ({ status: 500 }),
      '/hang': () => HOLD,
    });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
    for (const slug of ['transform', 'http']) await install(t, org, slug);
    const remoteAgent = (path: string, extra: Record<string, unknown> = {}) =>
      registerAgent(t, org, { name: path.slice(1), kind: 'http.agent', config: { url: `${remote.url}${path}` }, maxAttempts: 1, ...extra });
    [slow, hang, flaky, failing] = await Promise.all([
      remoteAgent('/slow'),
      remoteAgent('/hang'),
      remoteAgent('/flaky'),
      remoteAgent('/fail'),
    ]);
  });
  afterAll(async () => {
    remote.dropHeld();
    await t.close();
    await remote.close();
  });

  const define = (definition: Record<string, unknown>, as: TestOrg = org) =>
    t.http().post('/api/workflows').set(bearer(as.admin)).send(definition);
  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await define(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const run = (id: string, input: unknown, query = '') =>
    t.http().post(`/api/workflows/${id}/run${query}`).set(bearer(org.member)).send({ input });
  const settled = async (workflowId: string, runId: string, timeoutMs = 20_000) => {
    let status: unknown;
    return eventually(
      async () => {
        const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer));
        status = res.body.status;
        return ['queued', 'running'].includes(res.body.status) ? undefined : res.body;
      },
      { timeoutMs, intervalMs: 100, message: () => `run ${runId} to finish (still ${status})` },
    );
  };
  const step = (body: { steps: Array<{ id: string }> }, id: string) => body.steps.find((s) => s.id === id)! as Record<string, unknown>;
  const jobDone = (id: string) => untilJobDone(t, 'workflow_runs', id);

  describe('definition', () => {
    it('defines a workflow: 201, a Location, version 1', async () => {
      const res = await define({ name: 'one', steps: [{ id: 'a', ...jsonata('$') }] });
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe(`/api/workflows/${res.body.id}`);
      expect(res.body).toMatchObject({
        name: 'one',
        version: 1,
        description: '',
        inputSchema: null,
        output: null,
        timeoutMs: 3600000,
        steps: [{ id: 'a', action: 'transform.jsonata', with: { expression: '$' } }],
        createdBy: org.admin.id,
      });
      expect((await t.http().get(`/api/workflows/${res.body.id}`).set(bearer(org.viewer))).body).toEqual(res.body);
    });

    const problems = async (definition: Record<string, unknown>) => {
      const res = await define(definition);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'WORKFLOW_INVALID', status: 400 });
      return res.body.error.details as Array<{ path: string; message: string }>;
    };

    it.each([
      [
        'a duplicate id',
        [
          { id: 'a', ...jsonata('$') },
          { id: 'a', ...jsonata('$') },
        ],
        'steps[1].id',
        "step id 'a' is used twice",
      ],
      ['an unknown need', [{ id: 'a', ...jsonata('$'), needs: ['ghost'] }], 'steps[0].needs[0]', "needs 'ghost', which is not a step"],
      ['no kind', [{ id: 'a' }], 'steps[0]', 'needs exactly one of agent, action, sleep, switch, map, workflow or wait; it has none'],
      ['two kinds', [{ id: 'a', agent: randomUUID(), ...jsonata('$') }], 'steps[0]', 'it has agent and action'],
      ['an unknown agent', [{ id: 'a', agent: randomUUID() }], 'steps[0].agent', 'in this organization'],
      ['a plugin not installed', [{ id: 'a', action: 'llm.chat' }], 'steps[0].action', "plugin 'llm' is not installed"],
      ['an unknown action', [{ id: 'a', action: 'transform.nothing' }], 'steps[0].action', "no action 'transform.nothing'"],
      ['an input that does not compile', [{ id: 'a', ...jsonata('$'), input: 'input.(' }], 'steps[0].input', 'at position'],
      ['an if that does not compile', [{ id: 'a', ...jsonata('$'), if: '$$$(' }], 'steps[0].if', "step 'a' if:"],
      ['a with that fails its schema', [{ id: 'a', action: 'transform.jsonata', with: {} }], 'steps[0].with', 'expression'],
      ['a bad step id', [{ id: 'Bad Id', ...jsonata('$') }], 'steps[0].id', 'pattern'],
      [
        'an input that reads a step it does not wait for (issue 25)',
        [
          { id: 'upper', ...jsonata('$uppercase(text)') },
          { id: 'report', ...jsonata('$'), input: '{"text": steps.upper.output}' },
        ],
        'steps[1].input',
        "step 'report' input reads steps.upper but does not wait for it: add 'upper' to its needs",
      ],
    ])('reports %s', async (_what, steps, path, message) => {
      const details = await problems({ name: 'x', steps });
      expect(details).toEqual(expect.arrayContaining([expect.objectContaining({ path, message: expect.stringContaining(message) })]));
    });

    it('names a cycle', async () => {
      const details = await problems({
        name: 'x',
        steps: [
          { id: 'a', ...jsonata('$'), needs: ['c'] },
          { id: 'b', ...jsonata('$'), needs: ['a'] },
          { id: 'c', ...jsonata('$'), needs: ['b'] },
        ],
      });
      expect(details).toEqual([{ path: 'steps', message: 'the steps form a cycle: a -> b -> c -> a' }]);
    });

    it("refuses another organization's agent like a missing one", async () => {
      const theirs = await (async () => {
        await install(t, other, 'transform');
        return registerAgent(t, other, { kind: 'transform.jsonata', config: { expression: '$' } });
      })();
      const details = await problems({ name: 'x', steps: [{ id: 'a', agent: theirs }] });
      expect(details).toEqual([{ path: 'steps[0].agent', message: `step 'a': no agent ${theirs} in this organization` }]);
    });

    it('reports every problem at once', async () => {
      const details = await problems({
        name: 'x',
        output: 'steps.(',
        inputSchema: { type: 'nonsense' },
        steps: [
          { id: 'a', ...jsonata('$'), needs: ['b'] },
          { id: 'b', ...jsonata('$'), needs: ['a'] },
          { id: 'c', agent: randomUUID(), input: '((' },
          { id: 'd' },
        ],
      });
      expect(details.map((d) => d.path).sort()).toEqual(['inputSchema', 'output', 'steps', 'steps[2].agent', 'steps[2].input', 'steps[3]']);
    });

    it("answers the definition's JSON Schema, which passes what the service takes and fails what it refuses for shape", async () => {
      const res = await t.http().get('/api/workflows/definition-schema').set(bearer(org.viewer));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ type: 'object', required: ['name', 'steps'] });
      const stepFields = Object.keys(res.body.properties.steps.items.properties);
      expect(stepFields).toEqual(expect.arrayContaining(['id', 'agent', 'action', 'with', 'sleep', 'wait', 'map', 'workflow', 'switch', 'needs']));
      const validate = new Ajv({ strict: false, allErrors: true }).compile(res.body);
      const good = { name: 'ok', steps: [{ id: 'a', ...jsonata('$') }, { id: 'b', sleep: { seconds: 1 }, needs: ['a'] }] };
      expect(validate(good)).toBe(true);
      expect((await define(good)).status).toBe(201);
      const bad = { name: 'x', steps: [{ id: 'a', ...jsonata('$'), retry: { maxAttempts: 0 } }] };
      expect(validate(bad)).toBe(false);
      expect(validate.errors!.map((e) => e.instancePath)).toContain('/steps/0/retry/maxAttempts');
      expect(await problems(bad)).toEqual([expect.objectContaining({ path: 'steps[0].retry.maxAttempts' })]);
    });

    it('enforces the limits: 100 steps and 256 KiB', async () => {
      const many = Array.from({ length: 101 }, (_, i) => ({ id: `s${i}`, ...jsonata('$') }));
      const tooMany = await problems({ name: 'x', steps: many });
      expect(tooMany[0]).toMatchObject({ path: 'steps', message: expect.stringContaining('100') });
      const big = await problems({
        name: 'x',
        description: 'x'.repeat(10),
        steps: [{ id: 'a', ...jsonata(`"${'y'.repeat(9000)}"`) }],
        inputSchema: { blob: 'z'.repeat(260 * 1024) },
      });
      expect(big[0].message).toContain('at most 262144');
    });

    it('makes a new version on PUT; runs keep the version they started with', async () => {
      const id = await defined({ name: 'v', steps: [{ id: 'a', agent: slow }], output: '"v1"' });
      const first = await run(id, {}, '?wait=0');
      const put = await t
        .http()
        .put(`/api/workflows/${id}`)
        .set(bearer(org.admin))
        .send({ name: 'v2', steps: [{ id: 'b', ...jsonata('"v2"') }], output: 'steps.b.output' });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ id, version: 2, name: 'v2' });
      const second = await run(id, {});
      expect(second.body).toMatchObject({ workflowVersion: 2, status: 'succeeded', output: 'v2' });
      expect(await settled(id, first.body.id)).toMatchObject({ workflowVersion: 1, status: 'succeeded', output: 'v1' });
      const versions = await t.http().get(`/api/workflows/${id}/versions`).set(bearer(org.viewer));
      expect(versions.body.data.map((v: { version: number; name: string }) => [v.version, v.name])).toEqual([
        [2, 'v2'],
        [1, 'v'],
      ]);
      const bad = await t.http().put(`/api/workflows/${id}`).set(bearer(org.admin)).send({ name: 'v3', steps: [] });
      expect(bad.status).toBe(400);
      expect((await t.http().get(`/api/workflows/${id}`).set(bearer(org.viewer))).body.version).toBe(2);
    });
  });

  describe('runs', () => {
    it('runs a diamond: b and c in parallel, data flowing through JSONata', async () => {
      const id = await defined({
        name: 'diamond',
        steps: [
          { id: 'a', ...jsonata('$ * 2'), input: 'input.n' },
          { id: 'b', agent: slow, needs: ['a'], input: '{ "from": "b", "v": steps.a.output }' },
          { id: 'c', agent: slow, needs: ['a'], input: '{ "from": "c", "v": steps.a.output }' },
          { id: 'd', ...jsonata('$'), needs: ['b', 'c'], input: '[steps.b.output.key, steps.c.output.key]' },
        ],
        output: '{ "doubled": steps.a.output, "keys": steps.d.output }',
      });
      const res = await run(id, { n: 21 });
      expect(res.status).toBe(200);
      const body = res.body;
      expect(body).toMatchObject({
        status: 'succeeded',
        workflowVersion: 1,
        input: { n: 21 },
        error: null,
        triggeredBy: { type: 'user', id: org.member.id },
      });
      expect(body.output).toEqual({ doubled: 42, keys: [`${body.id}:b`, `${body.id}:c`] });
      expect(step(body, 'b')).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        input: { from: 'b', v: 42 },
        executionId: expect.any(String),
      });
      const [b, c] = [step(body, 'b'), step(body, 'c')].map((s) => ({
        start: Date.parse(s.startedAt as string),
        end: Date.parse(s.finishedAt as string),
      }));
      expect(b.start).toBeLessThan(c.end);
      expect(c.start).toBeLessThan(b.end);

      // The agent step is an execution of the agent, triggered by the run.
      const execution = await t
        .http()
        .get(`/api/agents/${slow}/history/${step(body, 'b').executionId}`)
        .set(bearer(org.viewer));
      expect(execution.body).toMatchObject({
        status: 'succeeded',
        triggeredBy: { type: 'workflow_run', id: body.id },
        output: { key: `${body.id}:b` },
      });
    });

    it('skips a step whose if is false, and the steps that need it', async () => {
      const id = await defined({
        name: 'if',
        steps: [
          { id: 'gate', ...jsonata('$'), if: 'input.go' },
          { id: 'after', ...jsonata('"ran"'), needs: ['gate'] },
          { id: 'always', ...jsonata('"ran"') },
        ],
      });
      const skipped = (await run(id, { go: false })).body;
      expect(skipped.status).toBe('succeeded');
      expect(skipped.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
        ['gate', 'skipped'],
        ['after', 'skipped'],
        ['always', 'succeeded'],
      ]);
      expect(skipped.output).toEqual({ always: 'ran' });
      expect((await run(id, { go: true })).body.steps.map((s: { status: string }) => s.status)).toEqual([
        'succeeded',
        'succeeded',
        'succeeded',
      ]);
    });

    it('retries a step with backoff, then succeeds with the same key', async () => {
      const id = await defined({ name: 'retry', steps: [{ id: 'call', agent: flaky, retry: { maxAttempts: 3, backoffMs: 50 } }] });
      const body = (await run(id, {})).body;
      expect(body).toMatchObject({ status: 'succeeded', output: { call: { calls: 3 } } });
      expect(step(body, 'call')).toMatchObject({ attempts: 3 });
      expect(remote.calls.get(`${body.id}:call`)).toHaveLength(3);
    });

    it('fails the run when a step fails: running steps are canceled, the rest skipped', async () => {
      const id = await defined({
        name: 'fail',
        steps: [
          { id: 'bad', agent: failing },
          { id: 'long', agent: hang },
          { id: 'next', ...jsonata('$'), needs: ['bad'] },
        ],
      });
      const body = (await run(id, {})).body;
      expect(body).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'STEP_FAILED', message: expect.stringContaining("Step 'bad' failed: UPSTREAM_ERROR") },
      });
      expect(body.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
        ['bad', 'failed'],
        ['long', 'canceled'],
        ['next', 'skipped'],
      ]);
      expect(step(body, 'bad').error).toMatchObject({ code: 'UPSTREAM_ERROR' });
      await eventually(() => remote.aborted.includes(`${body.id}:long`), {
        timeoutMs: 100,
        intervalMs: 10,
        message: 'the call of step long to be aborted',
      });
    });

    it('cancels a run mid-step: the call is aborted and the run never turns succeeded', async () => {
      const id = await defined({
        name: 'cancel',
        steps: [
          { id: 'wait', agent: hang },
          { id: 'then', ...jsonata('"no"'), needs: ['wait'] },
        ],
      });
      const started = (await run(id, {}, '?wait=0')).body;
      const key = `${started.id}:wait`;
      const deadline = Date.now() + 10_000;
      await eventually(() => remote.calls.has(key), { timeoutMs: 10_000, intervalMs: 20, message: `the call of ${key}` });
      const cancel = await t.http().post(`/api/workflows/${id}/runs/${started.id}/cancel`).set(bearer(org.member));
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ status: 'canceled', error: { code: 'CANCELED' } });
      expect(cancel.body.steps.map((s: { status: string }) => s.status)).toEqual(['canceled', 'skipped']);
      await eventually(() => remote.aborted.includes(key), {
        timeoutMs: deadline - Date.now(),
        intervalMs: 20,
        message: `the call of ${key} to be aborted`,
      });
      // The worker that ran it has let go of its job: nothing it does after the abort can change the run.
      await jobDone(started.id);
      const after = await settled(id, started.id);
      expect(after.status).toBe('canceled');
      expect(after.steps.map((s: { status: string }) => s.status)).toEqual(['canceled', 'skipped']);
      const again = await t.http().post(`/api/workflows/${id}/runs/${started.id}/cancel`).set(bearer(org.member));
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('NOT_CANCELABLE');
    });

    it('times a run out at its timeoutMs', async () => {
      const id = await defined({ name: 'timeout', timeoutMs: 1000, steps: [{ id: 'wait', agent: hang }] });
      const body = (await run(id, {}, '?wait=10')).body;
      expect(body).toMatchObject({ status: 'timed_out', error: { code: 'RUN_TIMEOUT' } });
      expect(step(body, 'wait').status).toBe('canceled');
    });

    it('fails a step whose expression fails at run time', async () => {
      const id = await defined({ name: 'expr', steps: [{ id: 'a', ...jsonata('$'), input: '$error("boom")' }] });
      const body = (await run(id, {})).body;
      expect(body.status).toBe('failed');
      expect(step(body, 'a').error).toMatchObject({ code: 'EXPRESSION_FAILED', message: expect.stringContaining('boom') });
    });

    it('checks the run input against the inputSchema', async () => {
      const id = await defined({ name: 'schema', inputSchema: { type: 'object', required: ['n'] }, steps: [{ id: 'a', ...jsonata('$') }] });
      const res = await run(id, { m: 1 });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: 'input' })] });
    });

    it('answers 202 with a Location at once with wait=0', async () => {
      const id = await defined({ name: 'async', steps: [{ id: 'a', ...jsonata('"done"') }] });
      const res = await run(id, {}, '?wait=0');
      expect(res.status).toBe(202);
      expect(res.headers.location).toBe(`/api/workflows/${id}/runs/${res.body.id}`);
      expect(await settled(id, res.body.id)).toMatchObject({ status: 'succeeded', output: { a: 'done' } });
    });

    it('is idempotent with an Idempotency-Key, also under concurrent duplicates', async () => {
      const id = await defined({ name: 'idem', steps: [{ id: 'a', ...jsonata('input.n + 1') }] });
      const key = `k-${randomUUID()}`;
      const responses = await Promise.all(Array.from({ length: 10 }, () => run(id, { n: 1 }).set('Idempotency-Key', key)));
      expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
      const history = await t.http().get(`/api/workflows/${id}/runs`).set(bearer(org.viewer));
      expect(history.body.data).toHaveLength(1);
      const reused = await run(id, { n: 2 }).set('Idempotency-Key', key);
      expect(reused.status).toBe(409);
      expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    });

    it('lists runs newest first with filters and a cursor', async () => {
      const id = await defined({ name: 'history', steps: [{ id: 'a', ...jsonata('$'), input: 'input.n' }] });
      const ids: string[] = [];
      for (let n = 0; n < 5; n++) ids.push((await run(id, { n })).body.id);
      const failed = (await run(id, { n: 'x' }, '')).body.id;
      expect(failed).toBeDefined();
      const first = await t.http().get(`/api/workflows/${id}/runs?limit=3`).set(bearer(org.viewer));
      expect(first.body.data.map((r: { id: string }) => r.id)).toEqual([failed, ids[4], ids[3]]);
      expect(first.body.data[0].steps).toBeUndefined();
      const second = await t.http().get(`/api/workflows/${id}/runs?limit=3&cursor=${first.body.nextCursor}`).set(bearer(org.viewer));
      expect(second.body).toEqual({
        data: ids
          .slice(0, 3)
          .reverse()
          .map((rid) => expect.objectContaining({ id: rid })),
        nextCursor: null,
      });
      const succeeded = await t.http().get(`/api/workflows/${id}/runs?status=succeeded&limit=100`).set(bearer(org.viewer));
      expect(succeeded.body.data).toHaveLength(6);
      expect((await t.http().get(`/api/workflows/${id}/runs?status=nope`).set(bearer(org.viewer))).status).toBe(400);
    });
  });

  describe('access', () => {
    it('lets admins define, members run and cancel, viewers read', async () => {
      const id = await defined({ name: 'roles', steps: [{ id: 'a', ...jsonata('1') }] });
      for (const user of [org.member, org.viewer]) {
        expect(
          (
            await t
              .http()
              .post('/api/workflows')
              .set(bearer(user))
              .send({ name: 'x', steps: [{ id: 'a', ...jsonata('1') }] })
          ).status,
        ).toBe(403);
        expect(
          (
            await t
              .http()
              .put(`/api/workflows/${id}`)
              .set(bearer(user))
              .send({ name: 'x', steps: [{ id: 'a', ...jsonata('1') }] })
          ).status,
        ).toBe(403);
        expect((await t.http().delete(`/api/workflows/${id}`).set(bearer(user))).status).toBe(403);
        expect((await t.http().get(`/api/workflows/${id}`).set(bearer(user))).status).toBe(200);
        expect((await t.http().get(`/api/workflows/${id}/runs`).set(bearer(user))).status).toBe(200);
        expect((await t.http().get(`/api/workflows/${id}/versions`).set(bearer(user))).status).toBe(200);
      }
      const viewerRun = await t.http().post(`/api/workflows/${id}/run`).set(bearer(org.viewer)).send({});
      expect(viewerRun.status).toBe(403);
      const runId = (await run(id, {})).body.id;
      expect((await t.http().post(`/api/workflows/${id}/runs/${runId}/cancel`).set(bearer(org.viewer))).status).toBe(403);
      expect((await t.http().get('/api/workflows')).status).toBe(401);
    });

    it("answers another organization's workflow and runs as if they did not exist", async () => {
      const id = await defined({ name: 'mine', steps: [{ id: 'a', ...jsonata('1') }] });
      const runId = (await run(id, {})).body.id;
      const as = bearer(other.admin);
      const notFound = { error: { code: 'WORKFLOW_NOT_FOUND', message: 'No such workflow', status: 404 } };
      expect((await t.http().get(`/api/workflows/${id}`).set(as)).body).toEqual(notFound);
      expect(
        (
          await t
            .http()
            .put(`/api/workflows/${id}`)
            .set(as)
            .send({ name: 'x', steps: [{ id: 'a', ...jsonata('1') }] })
        ).body,
      ).toEqual(notFound);
      expect((await t.http().delete(`/api/workflows/${id}`).set(as)).body).toEqual(notFound);
      expect((await t.http().post(`/api/workflows/${id}/run`).set(as).send({})).body).toEqual(notFound);
      expect((await t.http().get(`/api/workflows/${id}/runs`).set(as)).body).toEqual(notFound);
      expect((await t.http().get(`/api/workflows/${id}/versions`).set(as)).body).toEqual(notFound);
      expect((await t.http().get(`/api/workflows/${id}/runs/${runId}`).set(as)).body.error.code).toBe('RUN_NOT_FOUND');
      expect((await t.http().post(`/api/workflows/${id}/runs/${runId}/cancel`).set(as)).body.error.code).toBe('RUN_NOT_FOUND');
      expect((await t.http().get('/api/workflows').set(as)).body.data.map((w: { id: string }) => w.id)).not.toContain(id);
    });

    it('deletes a workflow, keeping its runs readable; refuses to delete agents and plugins it uses', async () => {
      const own = await t.newOrg('enterprise');
      await install(t, own, 'transform');
      const agent = await registerAgent(t, own, { name: 'used', kind: 'transform.jsonata', config: { expression: '$' } });
      const created = await define(
        {
          name: 'user of things',
          steps: [
            { id: 'a', agent },
            { id: 'b', ...jsonata('1') },
          ],
        },
        own,
      );
      const id = created.body.id as string;
      const usedAgent = await t.http().delete(`/api/agents/${agent}`).set(bearer(own.admin));
      expect(usedAgent.status).toBe(409);
      expect(usedAgent.body.error).toEqual({
        code: 'AGENT_IN_USE',
        message: "Agent 'used' is used by workflow 'user of things'",
        status: 409,
      });
      const usedPlugin = await t.http().delete('/api/plugins/transform').set(bearer(own.admin));
      expect(usedPlugin.status).toBe(409);
      expect(usedPlugin.body.error.message).toContain("workflow 'user of things'");

      const runId = (await t.http().post(`/api/workflows/${id}/run`).set(bearer(own.member)).send({ input: 5 })).body.id;
      expect((await t.http().delete(`/api/workflows/${id}`).set(bearer(own.admin))).status).toBe(204);
      expect((await t.http().get(`/api/workflows/${id}`).set(bearer(own.admin))).status).toBe(404);
      expect((await t.http().post(`/api/workflows/${id}/run`).set(bearer(own.member)).send({})).status).toBe(404);
      const kept = await t.http().get(`/api/workflows/${id}/runs/${runId}`).set(bearer(own.viewer));
      expect(kept.body).toMatchObject({ id: runId, status: 'succeeded' });
      expect((await t.http().get(`/api/workflows/${id}/runs`).set(bearer(own.viewer))).body.data).toHaveLength(1);
      expect((await t.http().delete(`/api/agents/${agent}`).set(bearer(own.admin))).status).toBe(204);
    });
  });
});
