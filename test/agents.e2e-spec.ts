import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { JobReconciler } from '../src/queue/job-reconciler';
import { executionsWithoutLiveJob, install, registerAgent, settled } from './support/agents';
import { eventually } from './support/eventually';
import { untilJobDone } from './support/queue-job';
import { FakeRemoteAgent, HOLD, startFakeRemoteAgent, succeedsOnCall } from './support/fake-remote-agent';
import { bearer, createTestApp, scrapeMetrics, TestApp, TestOrg } from './support/test-app';

const UPPERCASE = { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };

// Enterprise organizations: these specs make more requests than the starter budget allows.
describe('agents', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let remote: FakeRemoteAgent;

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({
      '/ok': (call) => ({ body: { echo: JSON.parse(call.body) } }),
      '/fail': () => ({ status: 500, body: { error: 'boom' } }),
      '/flaky': succeedsOnCall(3, { body: { error: 'busy' } }),
      '/slow': () => ({ body: { slow: true }, delayMs: 1500 }),
      '/hang': () => HOLD,
    });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    [org, other] = [await t.newOrg('enterprise'), await t.newOrg('enterprise')];
  });
  afterAll(async () => {
    remote.dropHeld();
    await t.close();
    await remote.close();
  });

  const agents = () => t.http().post('/api/agents').set(bearer(org.admin));
  const jobDone = (id: string) => untilJobDone(t, 'agent_executions', id);
  const execute = (agentId: string, body: unknown, query = '') =>
    t
      .http()
      .post(`/api/agents/${agentId}/execute${query}`)
      .set(bearer(org.member))
      .send(body as object);

  describe('registration', () => {
    it('refuses a kind whose plugin is not installed, naming the plugin', async () => {
      const res = await agents().send({ name: 'x', ...UPPERCASE });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'PLUGIN_NOT_FOUND', message: "Plugin 'transform' is not installed", status: 404 } });
      const unknown = await agents().send({ name: 'x', kind: 'nosuch.agent' });
      expect(unknown.body.error).toMatchObject({ code: 'PLUGIN_NOT_FOUND', message: "Plugin 'nosuch' is not installed" });
    });

    it('registers an agent with defaults, answering 201 and a Location', async () => {
      await install(t, org, 'transform');
      const res = await agents().send({ name: 'Upper', description: 'shouts', ...UPPERCASE });
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe(`/api/agents/${res.body.id}`);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'Upper',
        description: 'shouts',
        kind: 'transform.jsonata',
        config: { expression: '$uppercase(text)' },
        inputSchema: null,
        timeoutMs: 30000,
        maxAttempts: 3,
        mcp: null,
        createdBy: org.admin.id,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const got = await t.http().get(`/api/agents/${res.body.id}`).set(bearer(org.viewer));
      expect(got.status).toBe(200);
      expect(got.body).toEqual(res.body);
    });

    it.each([
      [{ name: 'x', kind: 'transform' }, 'kind'],
      [{ name: 'x', kind: 'transform.nosuch' }, 'kind'],
      [{ name: 'x', kind: 'transform.jsonata', config: {} }, 'config'],
      [{ name: 'x', kind: 'transform.jsonata', config: { expression: 42 } }, 'config.expression'],
      [{ name: 'x', ...UPPERCASE, inputSchema: { type: 'no-such-type' } }, 'inputSchema'],
      [{ name: 'x', ...UPPERCASE, timeoutMs: 10 }, 'timeoutMs'],
      [{ name: 'x', ...UPPERCASE, maxAttempts: 11 }, 'maxAttempts'],
      [{ name: '', ...UPPERCASE }, 'name'],
      [{ name: 'x', ...UPPERCASE, organizationId: randomUUID() }, 'organizationId'],
    ])('refuses %j with VALIDATION_FAILED on %s', async (body, path) => {
      await install(t, org, 'transform');
      const res = await agents().send(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED', status: 400 });
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('lets only admins change agents; every role reads', async () => {
      await install(t, org, 'transform');
      const id = await registerAgent(t, org, UPPERCASE);
      for (const user of [org.member, org.viewer]) {
        expect(
          (
            await t
              .http()
              .post('/api/agents')
              .set(bearer(user))
              .send({ name: 'x', ...UPPERCASE })
          ).status,
        ).toBe(403);
        expect((await t.http().patch(`/api/agents/${id}`).set(bearer(user)).send({ name: 'y' })).status).toBe(403);
        expect((await t.http().delete(`/api/agents/${id}`).set(bearer(user))).status).toBe(403);
        expect((await t.http().get(`/api/agents/${id}`).set(bearer(user))).status).toBe(200);
      }
      const viewerRun = await t.http().post(`/api/agents/${id}/execute`).set(bearer(org.viewer)).send({ input: {} });
      expect(viewerRun.status).toBe(403);
      expect(viewerRun.body.error.code).toBe('FORBIDDEN');
      expect((await t.http().get('/api/agents')).status).toBe(401);
    });

    it("answers another organization's agent as if it did not exist", async () => {
      await install(t, org, 'transform');
      const id = await registerAgent(t, org, UPPERCASE);
      const { id: executionId } = (await execute(id, { input: { text: 'a' } })).body;
      const notFound = { error: { code: 'AGENT_NOT_FOUND', message: 'No such agent', status: 404 } };
      const as = (user: { token: string }) => ({ ...bearer(user) });
      expect((await t.http().get(`/api/agents/${id}`).set(as(other.admin))).body).toEqual(notFound);
      expect((await t.http().patch(`/api/agents/${id}`).set(as(other.admin)).send({ name: 'x' })).body).toEqual(notFound);
      expect((await t.http().delete(`/api/agents/${id}`).set(as(other.admin))).body).toEqual(notFound);
      expect((await t.http().post(`/api/agents/${id}/execute`).set(as(other.admin)).send({})).body).toEqual(notFound);
      expect((await t.http().get(`/api/agents/${id}/history`).set(as(other.admin))).body).toEqual(notFound);
      const execution = await t.http().get(`/api/agents/${id}/history/${executionId}`).set(as(other.admin));
      expect(execution.status).toBe(404);
      expect(execution.body.error.code).toBe('EXECUTION_NOT_FOUND');
      const cancel = await t.http().post(`/api/agents/${id}/history/${executionId}/cancel`).set(as(other.admin));
      expect(cancel.status).toBe(404);
      const list = await t.http().get('/api/agents').set(as(other.admin));
      expect(list.body).toEqual({ data: [], nextCursor: null });
    });

    it('lists newest first, filters by kind and pages with a cursor', async () => {
      const own = await t.newOrg('enterprise');
      await install(t, own, 'transform');
      await install(t, own, 'http');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await registerAgent(t, own, { name: `t${i}`, ...UPPERCASE }));
      const remoteId = await registerAgent(t, own, { name: 'remote', kind: 'http.agent', config: { url: `${remote.url}/ok` } });
      const first = await t.http().get('/api/agents?limit=4').set(bearer(own.viewer));
      expect(first.body.data.map((a: { id: string }) => a.id)).toEqual([remoteId, ...ids.slice(2).reverse()]);
      const second = await t.http().get(`/api/agents?limit=4&cursor=${first.body.nextCursor}`).set(bearer(own.viewer));
      expect(second.body).toEqual({
        data: [expect.objectContaining({ id: ids[1] }), expect.objectContaining({ id: ids[0] })],
        nextCursor: null,
      });
      const byKind = await t.http().get('/api/agents?kind=http.agent').set(bearer(own.viewer));
      expect(byKind.body.data.map((a: { id: string }) => a.id)).toEqual([remoteId]);
      expect((await t.http().get('/api/agents?kind=nonsense').set(bearer(own.viewer))).status).toBe(400);
    });

    it('changes an agent; its kind stays', async () => {
      await install(t, org, 'transform');
      const id = await registerAgent(t, org, UPPERCASE);
      const res = await t
        .http()
        .patch(`/api/agents/${id}`)
        .set(bearer(org.admin))
        .send({ name: 'Lower', config: { expression: '$lowercase(text)' }, inputSchema: { type: 'object' }, maxAttempts: 1 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'Lower',
        config: { expression: '$lowercase(text)' },
        inputSchema: { type: 'object' },
        maxAttempts: 1,
      });
      expect((await execute(id, { input: { text: 'MiXeD' } })).body.output).toBe('mixed');
      const kind = await t.http().patch(`/api/agents/${id}`).set(bearer(org.admin)).send({ kind: 'http.agent' });
      expect(kind.status).toBe(400);
      const badConfig = await t
        .http()
        .patch(`/api/agents/${id}`)
        .set(bearer(org.admin))
        .send({ config: { expression: '(' } });
      expect(badConfig.status).toBe(400);
      const cleared = await t.http().patch(`/api/agents/${id}`).set(bearer(org.admin)).send({ inputSchema: null });
      expect(cleared.body.inputSchema).toBeNull();
    });

    it('refuses to uninstall a plugin that agents use, naming them; deletes agents', async () => {
      const own = await t.newOrg('enterprise');
      await install(t, own, 'transform');
      const id = await registerAgent(t, own, { ...UPPERCASE, name: 'shouter' });
      const refused = await t.http().delete('/api/plugins/transform').set(bearer(own.admin));
      expect(refused.status).toBe(409);
      expect(refused.body.error).toEqual({ code: 'PLUGIN_IN_USE', message: "Plugin 'transform' is used by agent 'shouter'", status: 409 });

      expect((await t.http().delete(`/api/agents/${id}`).set(bearer(own.admin))).status).toBe(204);
      expect((await t.http().get(`/api/agents/${id}`).set(bearer(own.admin))).status).toBe(404);
      expect((await t.http().delete(`/api/agents/${id}`).set(bearer(own.admin))).status).toBe(404);
      expect((await t.http().delete('/api/plugins/transform').set(bearer(own.admin))).status).toBe(204);
    });
  });

  describe('execute', () => {
    let upper: string;
    beforeAll(async () => {
      await install(t, org, 'transform');
      await install(t, org, 'http');
      upper = await registerAgent(t, org, { ...UPPERCASE, inputSchema: { type: 'object', required: ['text'] } });
    });

    it('answers 200 with the finished execution when it finishes within wait', async () => {
      const res = await execute(upper, { input: { text: 'hello' } });
      expect(res.status).toBe(200);
      expect(res.headers.location).toBeUndefined();
      expect(res.body).toEqual({
        id: expect.any(String),
        agentId: upper,
        status: 'succeeded',
        input: { text: 'hello' },
        output: 'HELLO',
        error: null,
        attempts: 1,
        createdAt: expect.any(String),
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        durationMs: expect.any(Number),
        triggeredBy: { type: 'user', id: org.member.id },
        retryOf: null,
        retriedBy: null,
      });
      const stored = await t.http().get(`/api/agents/${upper}/history/${res.body.id}`).set(bearer(org.viewer));
      // The execution's GET also says it has no conversation (its agent calls no tools).
      expect(stored.body).toEqual({ ...res.body, conversation: null });
    });

    it('checks the input against the agent inputSchema', async () => {
      const res = await execute(upper, { input: { nope: 1 } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details).toEqual([expect.objectContaining({ path: 'input' })]);
      const history = await t.http().get(`/api/agents/${upper}/history?status=failed`).set(bearer(org.viewer));
      expect(history.body.data).toEqual([]);
    });

    it.each(['?wait=121', '?wait=-1', '?wait=soon'])('refuses %s', async (query) => {
      const res = await execute(upper, { input: { text: 'a' } }, query);
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].path).toBe('wait');
    });

    it('answers 202 with a Location at once with wait=0; the execution finishes in the background', async () => {
      const res = await execute(upper, { input: { text: 'later' } }, '?wait=0');
      expect(res.status).toBe(202);
      expect(res.headers.location).toBe(`/api/agents/${upper}/history/${res.body.id}`);
      expect(res.body.status).toBe('queued');
      const done = await settled(t, org, upper, res.body.id);
      expect(done).toMatchObject({ status: 'succeeded', output: 'LATER', attempts: 1 });
    });

    it('answers 202 when the agent outlasts wait, and finishes later', async () => {
      const slow = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/slow` } });
      const res = await execute(slow, { input: {} }, '?wait=1');
      expect(res.status).toBe(202);
      expect(['queued', 'running']).toContain(res.body.status);
      expect(await settled(t, org, slow, res.body.id)).toMatchObject({ status: 'succeeded', output: { slow: true } });
    });

    it('records a failing agent as a failed execution, not an HTTP error', async () => {
      const failing = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/fail` }, maxAttempts: 1 });
      const res = await execute(failing, { input: { a: 1 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'failed',
        output: null,
        error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 500' },
        attempts: 1,
      });
    });

    it('times an attempt out at the agent timeoutMs', async () => {
      const slow = await registerAgent(t, org, {
        kind: 'http.agent',
        config: { url: `${remote.url}/slow` },
        timeoutMs: 300,
        maxAttempts: 1,
      });
      const res = await execute(slow, { input: {} });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'timed_out', error: { code: 'AGENT_TIMEOUT' }, attempts: 1 });
    });

    it('retries a failing attempt with backoff up to maxAttempts, with the same idempotency key', async () => {
      const flaky = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/flaky` }, maxAttempts: 3 });
      const res = await execute(flaky, { input: {} });
      const done = res.status === 200 ? res.body : await settled(t, org, flaky, res.body.id);
      expect(done).toMatchObject({ status: 'succeeded', output: { calls: 3 }, attempts: 3 });
      expect(remote.calls.get(done.id)).toHaveLength(3);

      const twice = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/flaky` }, maxAttempts: 2 });
      // Between attempts the execution waits, holding no worker, with the last attempt's error.
      const waiting = await execute(twice, { input: {} }, '?wait=0');
      const seen = await eventually(
        async () => {
          const body = (await t.http().get(`/api/agents/${twice}/history/${waiting.body.id}`).set(bearer(org.viewer))).body;
          return body.status === 'waiting' && body;
        },
        { timeoutMs: 10_000, intervalMs: 20, message: 'the execution to wait for its second attempt' },
      );
      expect(seen).toMatchObject({ attempts: 1, error: { code: 'UPSTREAM_ERROR' }, finishedAt: null });
      expect((await t.http().get(`/api/agents/${twice}/history?status=waiting`).set(bearer(org.viewer))).body.data).toContainEqual(
        expect.objectContaining({ id: waiting.body.id }),
      );
      await settled(t, org, twice, waiting.body.id);
      const short = await execute(twice, { input: {} });
      const failed = short.status === 200 ? short.body : await settled(t, org, twice, short.body.id);
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'UPSTREAM_ERROR' }, attempts: 2 });
    });

    it('cancels a running execution, aborting the call to the agent; a finished one is not cancelable', async () => {
      const hang = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/hang` } });
      const res = await execute(hang, { input: {} }, '?wait=0');
      const id = res.body.id as string;
      const deadline = Date.now() + 10_000;
      await eventually(() => remote.calls.has(id), { timeoutMs: 10_000, message: `the call of execution ${id}` });
      expect((await t.http().get(`/api/agents/${hang}/history/${id}`).set(bearer(org.viewer))).body.status).toBe('running');

      const cancel = await t.http().post(`/api/agents/${hang}/history/${id}/cancel`).set(bearer(org.member));
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ id, status: 'canceled', error: { code: 'CANCELED' }, finishedAt: expect.any(String) });
      await eventually(() => remote.aborted.includes(id), {
        timeoutMs: deadline - Date.now(),
        message: `the call of execution ${id} to be aborted`,
      });

      const again = await t.http().post(`/api/agents/${hang}/history/${id}/cancel`).set(bearer(org.member));
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({ code: 'NOT_CANCELABLE', status: 409 });
      expect((await settled(t, org, hang, id)).status).toBe('canceled');
      const byViewer = await t.http().post(`/api/agents/${hang}/history/${id}/cancel`).set(bearer(org.viewer));
      expect(byViewer.status).toBe(403);
    });

    it('cancels a queued execution before any worker runs it', async () => {
      const hang = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.url}/hang` } });
      // Queued in the past of the worker: the row and job are created, then canceled at once.
      const res = await execute(hang, { input: { early: true } }, '?wait=0');
      const cancel = await t.http().post(`/api/agents/${hang}/history/${res.body.id}/cancel`).set(bearer(org.admin));
      expect(cancel.status).toBe(200);
      expect(cancel.body.status).toBe('canceled');
      // A worker has taken its job and let go of it, finding it canceled: it ran nothing.
      await jobDone(res.body.id);
      expect((await settled(t, org, hang, res.body.id)).status).toBe('canceled');
    });
  });

  describe('idempotency', () => {
    let upper: string;
    beforeAll(async () => {
      await install(t, org, 'transform');
      upper = await registerAgent(t, org, UPPERCASE);
    });

    it('gives 20 concurrent identical requests one execution', async () => {
      const key = `key-${randomUUID()}`;
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => execute(upper, { input: { text: 'once' } }).set('Idempotency-Key', key)),
      );
      for (const res of responses) expect([200, 202]).toContain(res.status);
      const ids = new Set(responses.map((r) => r.body.id));
      expect(ids.size).toBe(1);
      const history = await t.http().get(`/api/agents/${upper}/history?limit=100`).set(bearer(org.viewer));
      expect(history.body.data.filter((e: { input: { text: string } }) => e.input.text === 'once')).toHaveLength(1);

      const later = await execute(upper, { input: { text: 'once' } }).set('Idempotency-Key', key);
      expect(later.status).toBe(200);
      expect(later.body).toMatchObject({ id: [...ids][0], status: 'succeeded', output: 'ONCE' });
    });

    it('refuses the same key with a different body', async () => {
      const key = `key-${randomUUID()}`;
      expect((await execute(upper, { input: { text: 'a' } }).set('Idempotency-Key', key)).status).toBe(200);
      const reused = await execute(upper, { input: { text: 'b' } }).set('Idempotency-Key', key);
      expect(reused.status).toBe(409);
      expect(reused.body.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', status: 409 });
    });

    it('scopes a key to its agent and refuses a malformed key', async () => {
      const key = `key-${randomUUID()}`;
      const second = await registerAgent(t, org, UPPERCASE);
      const a = await execute(upper, { input: { text: 'a' } }).set('Idempotency-Key', key);
      const b = await execute(second, { input: { text: 'a' } }).set('Idempotency-Key', key);
      expect(a.body.id).not.toBe(b.body.id);
      const bad = await execute(upper, { input: {} }).set('Idempotency-Key', 'x'.repeat(256));
      expect(bad.status).toBe(400);
      expect(bad.body.error.details[0].path).toBe('Idempotency-Key');
    });
  });

  describe('history', () => {
    it('pages 250 executions newest first without duplicates or gaps, also while more are inserted', async () => {
      const own = await t.newOrg('enterprise');
      await install(t, own, 'transform');
      const id = await registerAgent(t, own, UPPERCASE);
      const run = (n: number) =>
        t
          .http()
          .post(`/api/agents/${id}/execute?wait=0`)
          .set(bearer(own.member))
          .send({ input: { text: `n${n}` } });
      const created: string[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const responses = await Promise.all(Array.from({ length: 25 }, (_, i) => run(batch * 25 + i)));
        created.push(...responses.map((r) => r.body.id as string));
      }

      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      let last = Number.POSITIVE_INFINITY;
      do {
        const [page]: [Response, unknown] = await Promise.all([
          t
            .http()
            .get(`/api/agents/${id}/history?limit=40${cursor ? `&cursor=${cursor}` : ''}`)
            .set(bearer(own.viewer)),
          run(1000 + pages),
        ]);
        expect(page.status).toBe(200);
        for (const e of page.body.data as Array<{ id: string; createdAt: string }>) {
          expect(Date.parse(e.createdAt)).toBeLessThanOrEqual(last);
          last = Date.parse(e.createdAt);
          seen.push(e.id);
        }
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      for (const e of created) expect(seen).toContain(e);
    });

    it('filters by status and since, and checks its query', async () => {
      const own = await t.newOrg('enterprise');
      await install(t, own, 'transform');
      const id = await registerAgent(t, own, UPPERCASE);
      await t
        .http()
        .post(`/api/agents/${id}/execute`)
        .set(bearer(own.member))
        .send({ input: { text: 'a' } });
      const cut = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      const later = await t
        .http()
        .post(`/api/agents/${id}/execute`)
        .set(bearer(own.member))
        .send({ input: { text: 'b' } });
      const since = await t.http().get(`/api/agents/${id}/history?since=${cut}`).set(bearer(own.viewer));
      expect(since.body.data.map((e: { id: string }) => e.id)).toEqual([later.body.id]);
      const succeeded = await t.http().get(`/api/agents/${id}/history?status=succeeded`).set(bearer(own.viewer));
      expect(succeeded.body.data).toHaveLength(2);
      expect((await t.http().get(`/api/agents/${id}/history?status=failed`).set(bearer(own.viewer))).body.data).toEqual([]);
      for (const bad of ['status=done', 'since=yesterday', 'cursor=nope', 'limit=101']) {
        const res = await t.http().get(`/api/agents/${id}/history?${bad}`).set(bearer(own.viewer));
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
      }
    });
  });

  describe('the engine', () => {
    it('requeues an execution whose job was lost, fails one past its allowance, and leaves none without a live job', async () => {
      await install(t, org, 'transform');
      const id = await registerAgent(t, org, { ...UPPERCASE, maxAttempts: 1 });
      const dataSource = t.app.get(DataSource);
      const reconciler = t.app.get(JobReconciler);
      // The reconciler looks at the whole database, which the files before this one share: what
      // they left without a live job is settled first, so the pass below finds only this test's.
      await reconciler.reconcile();
      const orphan = async (attempts: number) => {
        const executionId = randomUUID();
        await dataSource.query(
          `INSERT INTO agent_executions (id, organization_id, agent_id, status, input, attempts, job_id, triggered_by, created_at)
           VALUES ($1, $2, $3, 'running', '{"text":"lost"}', $4, $5, $6, now() - interval '1 minute')`,
          [executionId, org.id, id, attempts, randomUUID(), JSON.stringify({ type: 'user', id: org.admin.id })],
        );
        return executionId;
      };
      const recoverable = await orphan(1);
      const exhausted = await orphan(10);
      expect(await executionsWithoutLiveJob(dataSource, org.id)).toEqual(expect.arrayContaining([recoverable, exhausted]));

      // At least these two: a record another file left running may lose its job's lease in between.
      const result = await reconciler.reconcile();
      expect(result.requeued).toBeGreaterThanOrEqual(1);
      expect(result.failed).toBeGreaterThanOrEqual(1);
      expect(await settled(t, org, id, recoverable)).toMatchObject({ status: 'succeeded', output: 'LOST', attempts: 2 });
      expect(await settled(t, org, id, exhausted)).toMatchObject({ status: 'failed', error: { code: 'EXECUTION_LOST' } });
      expect(await executionsWithoutLiveJob(dataSource, org.id)).toEqual([]);
    });

    it('reports executions by kind and status, their latency and the queue depth on /metrics', async () => {
      await install(t, org, 'transform');
      const id = await registerAgent(t, org, UPPERCASE);
      await execute(id, { input: { text: 'm' } }).expect(200);
      const res = await scrapeMetrics(t);
      expect(res.text).toMatch(/agent_executions_total\{kind="transform.jsonata",status="succeeded"\} \d+/);
      expect(res.text).toMatch(/agent_executions_total\{kind="transform.jsonata",status="queued"\} \d+/);
      expect(res.text).toMatch(/agent_execution_duration_seconds_bucket\{le="0.5",kind="transform.jsonata",status="succeeded"\} \d+/);
      expect(res.text).toMatch(/job_queue_depth\{queue="agent-execution",state="created"\} \d+/);
    });
  });
});
