import type { AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { LiveStreams } from '../src/shared/http/live-record';
import { install, registerAgent } from './support/agents';
import { expectError } from './support/envelope';
import { eventually } from './support/eventually';
import { EventStream, openEventStream, transition } from './support/event-stream';
import { GatedAgent, startGatedAgent } from './support/gated-agent';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

jest.setTimeout(60_000);

// The live events of runs and executions as a client sees them (Server-Sent Events through
// Node's fetch), with the worker in the same process; across processes: postgres-only/run-events.
describe('live events of runs and executions', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let remote: GatedAgent;
  let agent: string;
  let workflowId: string;
  let base: string;

  beforeAll(async () => {
    remote = await startGatedAgent();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    [org, other] = await Promise.all([t.newOrg('enterprise'), t.newOrg()]);
    await install(t, org, 'http');
    agent = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.server.url}/call` }, maxAttempts: 1 });
    const res = await t
      .http()
      .post('/api/workflows')
      .set(bearer(org.admin))
      .send({
        name: 'three',
        steps: [
          { id: 'a', agent },
          { id: 'b', agent, needs: ['a'] },
          { id: 'c', agent, needs: ['b'] },
        ],
      });
    expect(res.status).toBe(201);
    workflowId = res.body.id as string;
  });
  afterAll(async () => {
    await t.close();
    await remote.server.close();
  });

  const start = async (): Promise<string> => {
    const res = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };
  const runEvents = (runId: string, headers: Record<string, string> = {}, who = org.viewer) =>
    openEventStream(`${base}/api/workflows/${workflowId}/runs/${runId}/events`, { ...bearer(who), ...headers });
  const expectStreamError = (stream: EventStream, status: number, code: string) =>
    expectError({ status: stream.status, body: stream.body } as Response, status, code);

  it('streams every transition of a three-step run in order after its state, ends with the final state and closes', async () => {
    const runId = await start();
    // Step a is running (its call is held) before the client connects.
    await eventually(async () => remote.held.get(`${runId}:a`), { message: 'the call of step a' });
    const stream = await runEvents(runId);
    expect({ status: stream.status, contentType: stream.contentType }).toEqual({
      status: 200,
      contentType: 'text/event-stream; charset=utf-8',
    });

    const state = await stream.until((e) => e.event === 'state');
    expect(state.data.run).toMatchObject({ runId, status: 'running', attempts: 1 });
    expect((state.data.steps as Array<Record<string, unknown>>).map((s) => [s.stepId, s.status])).toEqual([
      ['a', 'running'],
      ['b', 'pending'],
      ['c', 'pending'],
    ]);
    // Each call is answered once its step's start came: every transition is then seen on its own.
    await remote.release(`${runId}:a`);
    for (const step of ['b', 'c']) {
      await stream.until((e) => transition(e) === `step:${step}:running`);
      await remote.release(`${runId}:${step}`);
    }

    const events = await stream.ended;
    expect(events.map(transition)).toEqual([
      'state:',
      'step:a:succeeded',
      'step:b:running',
      'step:b:succeeded',
      'step:c:running',
      'step:c:succeeded',
      'run:succeeded',
    ]);
    // Sizes, not outputs; every event has an id of its own.
    const output = JSON.stringify({ step: `${runId}:a` });
    expect(events[1].data).toMatchObject({ stepId: 'a', attempts: 1, outputBytes: Buffer.byteLength(output), error: null });
    expect(events[1].data).not.toHaveProperty('output');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it('resumes from Last-Event-ID with what happened while the client was away: no gap, no repeat, no state', async () => {
    const runId = await start();
    const first = await runEvents(runId);
    await remote.release(`${runId}:a`);
    const bRunning = await first.until((e) => transition(e) === 'step:b:running');
    first.close();
    const seen = first.events.slice(0, first.events.indexOf(bRunning) + 1);

    // Away: b ends and c starts.
    await remote.release(`${runId}:b`);
    await eventually(async () => remote.held.get(`${runId}:c`), { message: 'the call of step c' });
    const second = await runEvents(runId, { 'Last-Event-ID': bRunning.id });
    await second.until((e) => transition(e) === 'step:c:running');
    await remote.release(`${runId}:c`);
    const resumed = await second.ended;

    expect(resumed.map(transition)).toEqual(['step:b:succeeded', 'step:c:running', 'step:c:succeeded', 'run:succeeded']);
    const all = [...seen, ...resumed].map(transition).filter((tr) => tr.startsWith('step:'));
    expect(all.filter((tr) => tr.endsWith(':succeeded'))).toEqual(['step:a:succeeded', 'step:b:succeeded', 'step:c:succeeded']);
  });

  it("gives a finished run's final state and closes at once; with its last id, nothing", async () => {
    const runId = await start();
    for (const step of ['a', 'b', 'c']) await remote.release(`${runId}:${step}`);
    await eventually(
      async () => (await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer))).body.status === 'succeeded',
    );

    const events = await (await runEvents(runId)).ended;
    expect(events.map((e) => e.event)).toEqual(['state']);
    expect(events[0].data.run).toMatchObject({ status: 'succeeded' });
    expect(await (await runEvents(runId, { 'Last-Event-ID': events[0].id })).ended).toEqual([]);
    // An id that is not one of this run's: the client gets the state afresh.
    expect((await (await runEvents(runId, { 'Last-Event-ID': 'garbage!' })).ended).map((e) => e.event)).toEqual(['state']);
  });

  it("streams an execution's transitions to its final state", async () => {
    const res = await t
      .http()
      .post(`/api/agents/${agent}/execute?wait=0`)
      .set(bearer(org.member))
      .send({ input: { n: 1 } });
    expect(res.status).toBe(202);
    const executionId = res.body.id as string;
    const stream = await openEventStream(`${base}/api/agents/${agent}/history/${executionId}/events`, bearer(org.viewer));
    expect(stream.status).toBe(200);
    const key = await eventually(async () => [...remote.held.keys()].find((k) => k.includes(executionId)), {
      message: 'the execution call',
    });
    await remote.release(key);

    const events = await stream.ended;
    expect(events[0].event).toBe('state');
    expect(events.at(-1)).toMatchObject({
      event: 'execution',
      data: { executionId, status: 'succeeded', attempts: 1, outputBytes: Buffer.byteLength(JSON.stringify({ step: key })) },
    });
  });

  /** A run started and held at step a, then its stream opened as `headers` say and read to its state. */
  const heldRunStream = async (headers: Record<string, string>) => {
    const runId = await start();
    await eventually(async () => remote.held.get(`${runId}:a`), { message: 'the call of step a' });
    const stream = await openEventStream(`${base}/api/workflows/${workflowId}/runs/${runId}/events`, headers);
    expect(stream.status).toBe(200);
    await stream.until((e) => e.event === 'state');
    return { runId, stream };
  };
  const releaseAll = async (runId: string) => {
    for (const step of ['a', 'b', 'c']) await remote.release(`${runId}:${step}`);
  };

  it('ends an open stream within seconds of its API key being revoked: an error event with the envelope, then the close', async () => {
    const issued = await t
      .http()
      .post('/api/auth/me/api-keys')
      .set(bearer(org.viewer))
      .send({ name: 'stream', scopes: ['workflows:read'] });
    expect(issued.status).toBe(201);
    const { runId, stream } = await heldRunStream({ authorization: `Bearer ${issued.body.key as string}` });

    const revoked = await t.http().delete(`/api/auth/me/api-keys/${issued.body.id as string}`).set(bearer(org.viewer));
    expect(revoked.status).toBe(204);
    // The run is still running: only the revoke ends the stream.
    const error = await stream.until((e) => e.event === 'error', 5000);
    expect(error.data).toEqual({ error: { code: 'UNAUTHORIZED', message: 'The API key is not valid', status: 401 } });
    const events = await stream.ended;
    expect(events.map((e) => e.event)).toEqual(['state', 'error']);
    expect((await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.viewer))).body.status).toBe('running');
    await releaseAll(runId);
  });

  it("ends an open stream within seconds of its user being disabled (the user's session)", async () => {
    const user = await t.addUser(org.id, 'viewer');
    const { runId, stream } = await heldRunStream(bearer(user));

    const disabled = await t.http().patch(`/api/users/${user.id}`).set(bearer(org.admin)).send({ disabled: true });
    expect(disabled.status).toBe(200);
    const error = await stream.until((e) => e.event === 'error', 5000);
    expect(error.data).toEqual({ error: { code: 'UNAUTHORIZED', message: 'The access token is not valid', status: 401 } });
    expect((await stream.ended).map((e) => e.event)).toEqual(['state', 'error']);
    await releaseAll(runId);
  });

  it('ends a stream that reached STREAM_MAX_SECONDS with a reconnect event; opened again with its last id, it goes on', async () => {
    const live = t.app.get(LiveStreams);
    const maxSeconds = live.maxSeconds;
    live.maxSeconds = 1;
    const held = await heldRunStream(bearer(org.viewer))
      .then(async (h) => ({ ...h, first: await h.stream.ended }))
      .finally(() => (live.maxSeconds = maxSeconds));
    const { runId, first } = held;
    expect(first.map((e) => e.event)).toEqual(['state', 'reconnect']);

    const again = await runEvents(runId, { 'Last-Event-ID': first[0].id });
    await remote.release(`${runId}:a`);
    for (const step of ['b', 'c']) {
      await again.until((e) => transition(e) === `step:${step}:running`);
      await remote.release(`${runId}:${step}`);
    }
    const events = await again.ended;
    expect(events[0]).toMatchObject({ event: 'step', data: { stepId: 'a', status: 'succeeded' } });
    expect(events.at(-1)).toMatchObject({ event: 'run', data: { status: 'succeeded' } });
  });

  it('refuses in the envelope before any stream: unknown or another organization’s run or execution, no token, a key without the scope', async () => {
    const runId = await start();
    const executionUrl = `${base}/api/agents/${agent}/history/00000000-0000-4000-8000-000000000000/events`;
    expectStreamError(await runEvents(runId, {}, other.admin), 404, 'RUN_NOT_FOUND');
    expectStreamError(await runEvents('00000000-0000-4000-8000-000000000000'), 404, 'RUN_NOT_FOUND');
    expectStreamError(await openEventStream(executionUrl, bearer(org.viewer)), 404, 'EXECUTION_NOT_FOUND');
    expectStreamError(await openEventStream(`${base}/api/workflows/${workflowId}/runs/${runId}/events`, {}), 401, 'UNAUTHORIZED');
    expectStreamError(await runEvents('not-a-uuid'), 400, 'VALIDATION_FAILED');

    const issued = await t
      .http()
      .post('/api/auth/me/api-keys')
      .set(bearer(org.viewer))
      .send({ name: 'agents only', scopes: ['agents:read'] });
    expect(issued.status).toBe(201);
    const key = { authorization: `Bearer ${issued.body.key as string}` };
    expectStreamError(await openEventStream(`${base}/api/workflows/${workflowId}/runs/${runId}/events`, key), 403, 'FORBIDDEN');
    for (const step of ['a', 'b', 'c']) await remote.release(`${runId}:${step}`);
  });
});
