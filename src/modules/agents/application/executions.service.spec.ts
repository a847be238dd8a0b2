import { NoOpTransactionalAdapter, TransactionHost } from '@nestjs-cls/transactional';
import { Submission, Submitted } from '../../../queue/durable-jobs';
import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { CANCELED } from '../../../shared/jobs/outcome';
import { Agent } from '../domain/agent';
import { Execution } from '../domain/execution';
import { agentNotFound, AgentsService } from './agents.service';
import { ExecutionJobs } from './execution-jobs';
import { InMemoryExecutionRepository } from './execution.repository.fake';
import { TranscriptRepository } from '../domain/transcript.repository';
import { AgentDeltas } from './agent-deltas';
import { Signals } from '../../../queue/signals';
import { ExecutionsService } from './executions.service';

/**
 * `@Transactional()` on `enqueue` asks `TransactionHost.getInstance()`, which throws until a
 * host was constructed. This builds the one `ClsPluginTransactional` would provide, over the
 * library's no-op adapter: `tx` is the marker below inside a transaction, and the global CLS
 * service (nestjs-cls has one outside Nest too) says whether one is active.
 */
const connection = { connection: 'no-op' };
const transactions = new TransactionHost<NoOpTransactionalAdapter>({
  ...new NoOpTransactionalAdapter({ tx: connection, disableWarning: true }).optionsFactory(connection),
  connectionName: undefined,
  enableTransactionProxy: false,
  defaultTxOptions: {},
  extraProviderTokens: [],
});

const ORG = '00000000-0000-4000-8000-00000000000a';
const OTHER_ORG = '00000000-0000-4000-8000-00000000000b';
const caller: Principal = {
  userId: 'u1',
  organizationId: ORG,
  role: 'member',
  isOperator: false,
  email: 'ada@example.com',
  credential: { type: 'session' },
};
const INPUT_SCHEMA = { type: 'object', required: ['text'], properties: { text: { type: 'string' } } };

class FakeAgentsService implements Pick<AgentsService, 'get'> {
  readonly agents: Agent[] = [];

  async get(organizationId: string, id: string): Promise<Agent> {
    const agent = this.agents.find((a) => a.organizationId === organizationId && a.id === id);
    if (!agent) throw agentNotFound();
    return agent;
  }

  add(organizationId: string, props: Partial<Parameters<typeof Agent.create>[0]> = {}): Agent {
    const agent = Agent.create({
      organizationId,
      name: 'Summarizer',
      description: '',
      kind: 'llm.chat',
      config: {},
      inputSchema: null,
      mcp: null,
      timeoutMs: 30_000,
      maxAttempts: 3,
      createdBy: 'u1',
      ...props,
    });
    this.agents.push(agent);
    return agent;
  }
}

/** The durable-job kind as the service uses it: each call recorded; enqueue inserts, settle reads back. */
class FakeExecutionJobs implements Pick<ExecutionJobs, 'enqueue' | 'settle' | 'cancel'> {
  readonly enqueued: Array<{ submission: Submission<Execution>; inTransaction: boolean; tx: unknown }> = [];
  readonly settled: Array<{ submitted: Submitted<Execution>; labels: Record<string, string>; waitSeconds: number }> = [];
  readonly canceledCalls: Array<{ record: Execution; labels: Record<string, string> }> = [];

  constructor(private readonly executions: InMemoryExecutionRepository) {}

  async enqueue(submission: Submission<Execution>): Promise<Submitted<Execution>> {
    this.enqueued.push({ submission, inTransaction: transactions.isTransactionActive(), tx: transactions.tx });
    await this.executions.insert(submission.record);
    return { record: submission.record, created: true };
  }

  async settle(submitted: Submitted<Execution>, labels: Record<string, string>, waitSeconds: number): Promise<Execution> {
    this.settled.push({ submitted, labels, waitSeconds });
    return (await this.executions.findById(submitted.record.id))!;
  }

  async cancel(change: () => Promise<Execution | null>, labels: Record<string, string>): Promise<Execution | null> {
    const record = await change();
    if (record) this.canceledCalls.push({ record, labels });
    return record;
  }
}

function setup() {
  const agents = new FakeAgentsService();
  const executions = new InMemoryExecutionRepository();
  const jobs = new FakeExecutionJobs(executions);
  const audit = new RecordingAuditTrail();
  // These cases read no conversation: no transcript store, no deltas.
  const service = new ExecutionsService(
    agents as unknown as AgentsService,
    executions,
    jobs as unknown as ExecutionJobs,
    {} as TranscriptRepository,
    new AgentDeltas({ onData: () => undefined } as unknown as Signals),
    audit,
  );
  return { service, agents, executions, jobs, audit };
}

async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(error)}`);
  return error;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** An execution's id: time-ordered (version 7), so it falls in its week's partition. */
const TIME_ORDERED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('ExecutionsService', () => {
  describe('execute', () => {
    it.each([
      { timeoutMs: 2500, maxAttempts: 4, leaseSeconds: 8, retryLimit: 6 },
      { timeoutMs: 30_000, maxAttempts: 1, leaseSeconds: 35, retryLimit: 3 },
    ])(
      'queues a new record with the job options of an agent of $timeoutMs ms and $maxAttempts attempts, leaving the transaction to the kind',
      async ({ timeoutMs, maxAttempts, leaseSeconds, retryLimit }) => {
        const { service, agents, jobs } = setup();
        const agent = agents.add(ORG, { timeoutMs, maxAttempts, inputSchema: INPUT_SCHEMA });
        const input = { text: 'hello' };

        const execution = await service.execute(ORG, {
          agentId: agent.id,
          input,
          waitSeconds: 7,
          idempotencyKey: 'key-1',
          triggeredBy: { type: 'user', id: 'u1' },
        });

        expect(jobs.enqueued).toHaveLength(1);
        const [{ submission, inTransaction }] = jobs.enqueued;
        // The kind opens one where the submission needs it (its key here); a plain one is a single statement.
        expect(inTransaction).toBe(false);
        expect(submission.record).toEqual({
          id: expect.stringMatching(TIME_ORDERED_ID),
          organizationId: ORG,
          agentId: agent.id,
          status: 'queued',
          input,
          output: null,
          error: null,
          attempts: 0,
          jobId: expect.stringMatching(UUID),
          triggeredBy: { type: 'user', id: 'u1' },
          retryOf: null,
          retriedBy: null,
          createdAt: expect.any(Date),
          startedAt: null,
          finishedAt: null,
        });
        expect(submission.record.jobId).not.toBe(submission.record.id);
        expect(submission.sendOptions).toEqual({ leaseSeconds, retryLimit });
        expect(submission.idempotency).toEqual({ organizationId: ORG, scope: `agent:${agent.id}`, key: 'key-1', body: { input } });

        expect(jobs.settled).toEqual([
          { submitted: { record: submission.record, created: true }, labels: { kind: 'llm.chat' }, waitSeconds: 7 },
        ]);
        expect(execution).toEqual(submission.record);
        expect(transactions.isTransactionActive()).toBe(false);
      },
    );

    it('passes no idempotency without a key, and records a missing input as null', async () => {
      const { service, agents, jobs } = setup();
      const agent = agents.add(ORG);

      await service.execute(ORG, { agentId: agent.id, input: undefined, waitSeconds: 0, triggeredBy: { type: 'user', id: 'u1' } });

      expect(jobs.enqueued[0].submission.idempotency).toBeUndefined();
      expect(jobs.enqueued[0].submission.record.input).toBeNull();
    });

    it("refuses input the agent's inputSchema rejects with VALIDATION_FAILED, queuing nothing", async () => {
      const { service, agents, executions, jobs } = setup();
      const agent = agents.add(ORG, { inputSchema: INPUT_SCHEMA });

      const error = await rejection(
        service.execute(ORG, { agentId: agent.id, input: { text: 42 }, waitSeconds: 0, triggeredBy: { type: 'user', id: 'u1' } }),
      );

      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.message).toBe("The input of agent 'Summarizer' is not valid");
      expect(error.details).toEqual([expect.objectContaining({ path: 'input.text' })]);
      expect(jobs.enqueued).toEqual([]);
      expect(jobs.settled).toEqual([]);
      expect(executions.executions.size).toBe(0);
    });

    it("answers AGENT_NOT_FOUND for an unknown agent or another organization's, queuing nothing", async () => {
      const { service, agents, jobs } = setup();
      const theirs = agents.add(OTHER_ORG);
      const request = { input: {}, waitSeconds: 0, triggeredBy: { type: 'user' as const, id: 'u1' } };

      expect((await rejection(service.execute(ORG, { ...request, agentId: theirs.id }))).code).toBe('AGENT_NOT_FOUND');
      expect((await rejection(service.execute(ORG, { ...request, agentId: crypto.randomUUID() }))).code).toBe('AGENT_NOT_FOUND');
      expect(jobs.enqueued).toEqual([]);
    });
  });

  describe('cancel', () => {
    async function queued(status: Execution['status'] = 'queued') {
      const context = setup();
      const agent = context.agents.add(ORG);
      const execution = await context.service.execute(ORG, {
        agentId: agent.id,
        input: {},
        waitSeconds: 0,
        triggeredBy: { type: 'user', id: 'u1' },
      });
      context.executions.executions.get(execution.id)!.status = status;
      return { ...context, agent, execution };
    }

    it('cancels a queued execution and hands the record and its kind to the job kind', async () => {
      const { service, jobs, audit, agent, execution } = await queued();

      const canceled = await service.cancel(caller, agent.id, execution.id);

      expect(canceled).toMatchObject({ id: execution.id, status: 'canceled', error: CANCELED, finishedAt: expect.any(Date) });
      expect(jobs.canceledCalls).toEqual([{ record: canceled, labels: { kind: 'llm.chat' } }]);
      expect(audit.entries).toEqual([
        {
          organizationId: ORG,
          action: 'execution.canceled',
          target: { type: 'execution', id: execution.id, name: agent.name },
          changes: { after: { status: 'canceled', agentId: agent.id } },
        },
      ]);
    });

    it('cancels a running execution', async () => {
      const { service, jobs, agent, execution } = await queued('running');

      await expect(service.cancel(caller, agent.id, execution.id)).resolves.toMatchObject({ status: 'canceled' });
      expect(jobs.canceledCalls).toHaveLength(1);
    });

    it.each(['succeeded', 'failed', 'timed_out', 'canceled'] as const)(
      'refuses a %s execution with NOT_CANCELABLE naming its status',
      async (status) => {
        const { service, executions, jobs, audit, agent, execution } = await queued(status);

        const error = await rejection(service.cancel(caller, agent.id, execution.id));

        expect(error.code).toBe('NOT_CANCELABLE');
        expect(error.message).toBe(`The execution is already ${status} and cannot be canceled`);
        expect(jobs.canceledCalls).toEqual([]);
        expect(audit.entries).toEqual([]);
        expect((await executions.findById(execution.id))?.status).toBe(status);
      },
    );

    it('answers EXECUTION_NOT_FOUND for an execution the agent does not have', async () => {
      const { service, jobs, agent } = await queued();

      expect((await rejection(service.cancel(caller, agent.id, crypto.randomUUID()))).code).toBe('EXECUTION_NOT_FOUND');
      expect(jobs.canceledCalls).toEqual([]);
    });
  });

  describe('get', () => {
    it('answers an execution of the caller’s organization and agent', async () => {
      const { service, agents } = setup();
      const agent = agents.add(ORG);
      const execution = await service.execute(ORG, {
        agentId: agent.id,
        input: {},
        waitSeconds: 0,
        triggeredBy: { type: 'user', id: 'u1' },
      });

      await expect(service.get(caller, agent.id, execution.id)).resolves.toEqual(execution);
    });

    it("answers EXECUTION_NOT_FOUND for another organization's execution, or one under another agent", async () => {
      const { service, agents } = setup();
      const theirAgent = agents.add(OTHER_ORG);
      const theirs = await service.execute(OTHER_ORG, {
        agentId: theirAgent.id,
        input: {},
        waitSeconds: 0,
        triggeredBy: { type: 'user', id: 'u2' },
      });
      const ourAgent = agents.add(ORG);

      expect((await rejection(service.get(caller, theirAgent.id, theirs.id))).code).toBe('EXECUTION_NOT_FOUND');
      expect((await rejection(service.get(caller, ourAgent.id, theirs.id))).code).toBe('EXECUTION_NOT_FOUND');
    });
  });

  describe('history', () => {
    it("answers AGENT_NOT_FOUND for another organization's agent", async () => {
      const { service, agents } = setup();
      const theirs = agents.add(OTHER_ORG);

      expect((await rejection(service.history(caller, theirs.id, { limit: 10 }, {}))).code).toBe('AGENT_NOT_FOUND');
    });
  });
});
