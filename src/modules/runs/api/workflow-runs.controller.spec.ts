import { randomUUID } from 'node:crypto';
import { caller, controllerHarness, ControllerHarness, ORGANIZATION_ID } from '../../../../test/support/controller-harness';
import { expectError } from '../../../../test/support/envelope';
import type { Principal } from '../../../shared/auth/principal';
import { RetryRequest, RunsService } from '../application/runs.service';
import { WaitsService } from '../application/waits.service';
import { LiveStreams } from '../../../shared/http/live-record';
import { Run, RunStatus } from '../domain/run';
import { WorkflowRunsController } from './workflow-runs.controller';

/**
 * The HTTP contract of POST /api/workflows/:id/runs/:runId/retry on its own: who may call it,
 * what the body and query checks refuse before the service is asked, and how the answer is
 * made. What a retry keeps, runs and refuses is in test/workflow-retry.e2e-spec.ts.
 */
class FakeRuns {
  readonly asked: Array<{ workflowId: string; runId: string; request: RetryRequest }> = [];
  status: RunStatus = 'queued';

  retry = async (_caller: Principal, workflowId: string, runId: string, request: RetryRequest): Promise<Run> => {
    this.asked.push({ workflowId, runId, request });
    return {
      id: randomUUID(),
      organizationId: ORGANIZATION_ID,
      workflowId,
      workflowVersion: 1,
      status: this.status,
      input: null,
      output: null,
      error: null,
      attempts: 0,
      timeoutMs: 60_000,
      jobId: null,
      triggeredBy: request.triggeredBy,
      parentRunId: null,
      depth: 0,
      retryOf: runId,
      retriedBy: null,
      concurrency: null,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
      steps: [],
    };
  };
}

const WORKFLOW = randomUUID();
const RUN = randomUUID();
const path = `/api/workflows/${WORKFLOW}/runs/${RUN}/retry`;

describe('WorkflowRunsController: retry', () => {
  let harness: ControllerHarness;
  let runs: FakeRuns;

  beforeAll(async () => {
    runs = new FakeRuns();
    // Answering steps and live streams are not what these specs call.
    harness = await controllerHarness(
      [WorkflowRunsController],
      [
        { provide: RunsService, useValue: runs },
        { provide: WaitsService, useValue: {} },
        { provide: LiveStreams, useValue: {} },
      ],
    );
  });
  afterAll(() => harness.close());
  beforeEach(() => {
    runs.asked.splice(0);
    runs.status = 'queued';
  });

  it('lets an admin, a member and an API key with workflows:run retry; refuses a viewer and other keys', async () => {
    for (const who of [caller('admin'), caller('member'), caller('member', { scopes: ['workflows:run'] })]) {
      expect((await harness.http(who).post(path).send({})).status).toBe(202);
    }
    expect(runs.asked).toHaveLength(3);
    expectError(await harness.http(caller('viewer')).post(path).send({}), 403, 'FORBIDDEN');
    expectError(
      await harness
        .http(caller('admin', { scopes: ['workflows:read', 'agents:execute'] }))
        .post(path)
        .send({}),
      403,
      'FORBIDDEN',
    );
    expectError(await harness.http().post(path).send({}), 401, 'UNAUTHORIZED');
    expect(runs.asked).toHaveLength(3);
  });

  it('hands the service the body with its defaults, and answers 202 with a Location, or 200 once finished', async () => {
    const member = caller('member');
    const accepted = await harness.http(member).post(path).send({});
    expect(accepted.status).toBe(202);
    expect(accepted.headers.location).toBe(`/api/workflows/${WORKFLOW}/runs/${accepted.body.id}`);
    expect(accepted.body).toMatchObject({ retryOf: RUN, retriedBy: null, steps: [] });
    runs.status = 'succeeded';
    const done = await harness.http(member).post(`${path}?wait=5`).send({ fromStep: 'charge', version: 'latest' });
    expect(done.status).toBe(200);
    expect(done.headers.location).toBeUndefined();
    expect(runs.asked).toEqual([
      { workflowId: WORKFLOW, runId: RUN, request: { version: 'same', waitSeconds: 30, triggeredBy: { type: 'user', id: member.userId } } },
      {
        workflowId: WORKFLOW,
        runId: RUN,
        request: { fromStep: 'charge', version: 'latest', waitSeconds: 5, triggeredBy: { type: 'user', id: member.userId } },
      },
    ]);
  });

  it('takes no body at all', async () => {
    expect((await harness.http(caller('member')).post(path)).status).toBe(202);
  });

  it.each<[string, object, string]>([
    ['a fromStep that is not a step id', { fromStep: 'Charge now' }, 'fromStep'],
    ['a fromStep that is not a string', { fromStep: 3 }, 'fromStep'],
    ['a null fromStep', { fromStep: null }, 'fromStep'],
    ['a fromStep longer than a step id', { fromStep: 'a'.repeat(64) }, 'fromStep'],
    ['an unknown version', { version: 'newest' }, 'version'],
    ['an unknown field', { fromStep: 'a', organizationId: ORGANIZATION_ID }, 'organizationId'],
  ])('answers 400 for %s, before the service is asked', async (_what, body, field) => {
    expectError(await harness.http(caller('member')).post(path).send(body), 400, 'VALIDATION_FAILED', field);
    expect(runs.asked).toHaveLength(0);
  });

  it.each([
    ['a wait past 120 seconds', `${path}?wait=121`],
    ['a workflow id that is not a UUID', `/api/workflows/nope/runs/${RUN}/retry`],
    ['a run id that is not a UUID', `/api/workflows/${WORKFLOW}/runs/nope/retry`],
  ])('answers 400 for %s', async (_what, url) => {
    expectError(await harness.http(caller('member')).post(url).send({}), 400, 'VALIDATION_FAILED');
    expect(runs.asked).toHaveLength(0);
  });
});
