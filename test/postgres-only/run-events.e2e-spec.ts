import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { openEventStream, transition } from '../support/event-stream';
import { GatedAgent, startGatedAgent } from '../support/gated-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * Live events across processes: the client streams from the test's app (instance A, API only)
 * while a worker process runs the run; what wakes A's stream is the worker's NOTIFY.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');

jest.setTimeout(120_000);

describe('live events across processes', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: GatedAgent;
  let worker: ServiceProcess;
  let workflowId: string;
  let base: string;

  beforeAll(async () => {
    remote = await startGatedAgent();
    [t, worker] = await Promise.all([
      createTestApp({ env: { APP_ROLE: 'api', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' } }),
      startService({ APP_ROLE: 'worker', SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' }),
    ]);
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    org = await t.newOrg('enterprise');
    await install(t, org, 'http');
    const agent = await registerAgent(t, org, { kind: 'http.agent', config: { url: `${remote.server.url}/call` }, maxAttempts: 1 });
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
    await worker?.kill();
    await t?.close();
    await remote?.server.close();
  });

  const runEvents = (runId: string, headers: Record<string, string> = {}) =>
    openEventStream(`${base}/api/workflows/${workflowId}/runs/${runId}/events`, { ...bearer(org.viewer), ...headers });

  it("shows a worker process's run to a client on instance A, every transition in order, and resumes with Last-Event-ID", async () => {
    const started = await t.http().post(`/api/workflows/${workflowId}/run?wait=0`).set(bearer(org.member)).send({ input: {} });
    expect(started.status).toBe(202);
    const runId = started.body.id as string;

    const first = await runEvents(runId);
    const state = await first.until((e) => e.event === 'state');
    expect(state.data.run).toMatchObject({ runId });
    // Each call is answered once its step's start was seen: every transition then shows on its own.
    await remote.release(`${runId}:a`);
    const bRunning = await first.until((e) => transition(e) === 'step:b:running');
    first.close();

    // Away: b ends and c starts, on the worker.
    await remote.release(`${runId}:b`);
    await eventually(async () => remote.held.get(`${runId}:c`), { message: 'the call of step c' });
    const second = await runEvents(runId, { 'Last-Event-ID': bRunning.id });
    await second.until((e) => transition(e) === 'step:c:running');
    await remote.release(`${runId}:c`);
    const resumed = await second.ended;

    const seen = first.events.slice(0, first.events.indexOf(bRunning) + 1).map(transition);
    expect(seen.filter((tr) => tr.startsWith('step:')).slice(-2)).toEqual(['step:a:succeeded', 'step:b:running']);
    expect(resumed.map(transition)).toEqual(['step:b:succeeded', 'step:c:running', 'step:c:succeeded', 'run:succeeded']);
  });
});
