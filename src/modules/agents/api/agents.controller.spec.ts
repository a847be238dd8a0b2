import { randomUUID } from 'node:crypto';
import { caller, controllerHarness, ControllerHarness, ORGANIZATION_ID } from '../../../../test/support/controller-harness';
import { LiveStreams } from '../../../shared/http/live-record';
import { expectError } from '../../../../test/support/envelope';
import type { Principal } from '../../../shared/auth/principal';
import { AgentsService } from '../application/agents.service';
import { ExecuteRequest, ExecutionsService } from '../application/executions.service';
import { Execution, ExecutionStatus } from '../domain/execution';
import { AgentsController } from './agents.controller';

/**
 * The HTTP contract of POST /api/agents/:id/history/:executionId/retry on its own: who may call
 * it, the checks made before the service is asked, and how the answer is made. What a retry
 * refuses, and for which organization, is in test/workflow-retry.e2e-spec.ts.
 */
class FakeExecutions {
  readonly asked: Array<{ agentId: string; id: string; request: Pick<ExecuteRequest, 'waitSeconds' | 'triggeredBy'> }> = [];
  status: ExecutionStatus = 'queued';

  retry = async (
    _caller: Principal,
    agentId: string,
    id: string,
    request: Pick<ExecuteRequest, 'waitSeconds' | 'triggeredBy'>,
  ): Promise<Execution> => {
    this.asked.push({ agentId, id, request });
    return {
      id: randomUUID(),
      organizationId: ORGANIZATION_ID,
      agentId,
      status: this.status,
      input: { n: 1 },
      output: null,
      error: null,
      attempts: 0,
      jobId: null,
      triggeredBy: request.triggeredBy,
      retryOf: id,
      retriedBy: null,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
  };
}

const AGENT = randomUUID();
const EXECUTION = randomUUID();
const path = `/api/agents/${AGENT}/history/${EXECUTION}/retry`;

describe('AgentsController: retry an execution', () => {
  let harness: ControllerHarness;
  let executions: FakeExecutions;

  beforeAll(async () => {
    executions = new FakeExecutions();
    harness = await controllerHarness(
      [AgentsController],
      [
        { provide: AgentsService, useValue: {} },
        { provide: ExecutionsService, useValue: executions },
        { provide: LiveStreams, useValue: {} },
      ],
    );
  });
  afterAll(() => harness.close());
  beforeEach(() => {
    executions.asked.splice(0);
    executions.status = 'queued';
  });

  it('lets an admin, a member and an API key with agents:execute retry; refuses a viewer and other keys', async () => {
    for (const who of [caller('admin'), caller('member'), caller('member', { scopes: ['agents:execute'] })]) {
      expect((await harness.http(who).post(path)).status).toBe(202);
    }
    expectError(await harness.http(caller('viewer')).post(path), 403, 'FORBIDDEN');
    expectError(await harness.http(caller('admin', { scopes: ['agents:read', 'workflows:run'] })).post(path), 403, 'FORBIDDEN');
    expectError(await harness.http().post(path), 401, 'UNAUTHORIZED');
    expect(executions.asked).toHaveLength(3);
  });

  it('answers 202 with a Location, or 200 once finished within wait', async () => {
    const member = caller('member');
    const accepted = await harness.http(member).post(path);
    expect(accepted.headers.location).toBe(`/api/agents/${AGENT}/history/${accepted.body.id}`);
    expect(accepted.body).toMatchObject({ retryOf: EXECUTION, retriedBy: null });
    executions.status = 'failed';
    const done = await harness.http(member).post(`${path}?wait=5`);
    expect(done.status).toBe(200);
    expect(executions.asked.map((a) => a.request)).toEqual([
      { waitSeconds: 30, triggeredBy: { type: 'user', id: member.userId } },
      { waitSeconds: 5, triggeredBy: { type: 'user', id: member.userId } },
    ]);
  });

  it.each([
    ['a wait past 120 seconds', `${path}?wait=121`],
    ['an agent id that is not a UUID', `/api/agents/nope/history/${EXECUTION}/retry`],
    ['an execution id that is not a UUID', `/api/agents/${AGENT}/history/nope/retry`],
  ])('answers 400 for %s, before the service is asked', async (_what, url) => {
    expectError(await harness.http(caller('member')).post(url), 400, 'VALIDATION_FAILED');
    expect(executions.asked).toHaveLength(0);
  });
});
