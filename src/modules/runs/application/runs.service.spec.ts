import { randomUUID } from 'node:crypto';
import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { Submission, Submitted } from '../../../queue/durable-jobs';
import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { CANCELED } from '../../../shared/jobs/outcome';
import { WorkflowDefinition } from '../../workflows/domain/definition';
import { isRunFinished, pendingStep, Run, RunStatus } from '../domain/run';
import { Workflow } from '../../workflows/domain/workflow';
import { InMemoryRunRepository } from '../domain/run.repository.fake';
import { InMemoryWorkflowRepository } from '../../workflows/domain/workflow.repository.fake';
import { RunJobs } from './run-jobs';
import { RunsService } from './runs.service';
import { StepKinds } from './steps/step-kinds';
import { WorkflowsService } from '../../workflows/application/workflows.service';

const transactions = inlineTransactions();

/** Records what the service hands the durable-job core; enqueue inserts the record, settle answers it as it is. */
class RecordingRunJobs {
  readonly enqueued: Array<{ submission: Submission<Run>; inTransaction: boolean }> = [];
  readonly settled: Array<{ submitted: Submitted<Run>; labels: Record<string, string>; waitSeconds: number }> = [];
  readonly canceled_: Array<{ record: Run; labels: Record<string, string> }> = [];

  constructor(private readonly runs: InMemoryRunRepository) {}

  async enqueue(submission: Submission<Run>): Promise<Submitted<Run>> {
    this.enqueued.push({ submission, inTransaction: transactions.isTransactionActive() });
    await this.runs.insert(submission.record);
    return { record: submission.record, created: true };
  }
  async settle(submitted: Submitted<Run>, labels: Record<string, string>, waitSeconds: number): Promise<Run> {
    this.settled.push({ submitted, labels, waitSeconds });
    return submitted.record;
  }
  async cancel(change: () => Promise<Run | null>, labels: Record<string, string>): Promise<Run | null> {
    const record = await change();
    if (record) this.canceled_.push({ record, labels });
    return record;
  }
}

const ORG = 'org-1';
const OTHER_ORG = 'org-2';

function principal(organizationId = ORG): Principal {
  return {
    userId: 'user-1',
    organizationId,
    role: 'member',
    isOperator: false,
    email: 'member@example.com',
    credential: { type: 'session' },
  };
}

async function domainError(work: Promise<unknown>): Promise<DomainError> {
  const error = await work.then(
    () => new Error('expected a DomainError'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('RunsService', () => {
  let workflowRows: InMemoryWorkflowRepository;
  let runs: InMemoryRunRepository;
  let jobs: RecordingRunJobs;
  let service: RunsService;
  let audit: RecordingAuditTrail;

  beforeEach(() => {
    workflowRows = new InMemoryWorkflowRepository();
    runs = new InMemoryRunRepository();
    jobs = new RecordingRunJobs(runs);
    // Only `get` of WorkflowsService is used here: it reads the repository; its other collaborators are not.
    const workflows = new WorkflowsService(
      workflowRows,
      {} as never,
      {} as never,
      {} as never,
      {} as never,
      {} as never,
      {} as never,
      new RecordingAuditTrail(),
    );
    // No step kinds: only retries read them (test/workflow-retry.e2e-spec.ts); no concurrency in these definitions.
    audit = new RecordingAuditTrail();
    service = new RunsService(
      workflows,
      workflowRows,
      runs,
      jobs as unknown as RunJobs,
      { all: [] } as unknown as StepKinds,
      {} as never,
      audit,
    );
  });

  function workflow(definition: Partial<WorkflowDefinition> = {}, organizationId = ORG): Workflow {
    const now = new Date();
    const created = Workflow.rehydrate({
      id: randomUUID(),
      organizationId,
      definition: {
        name: 'Nightly report',
        steps: [
          { id: 'fetch', action: 'http.request' },
          { id: 'summarize', action: 'http.request', needs: ['fetch'] },
        ],
        ...definition,
      },
      version: 4,
      createdBy: 'user-1',
      createdAt: now,
      updatedAt: now,
    });
    return workflowRows.add(created);
  }

  /** A run of `of` as a worker left it. */
  function storedRun(of: Workflow, status: RunStatus, createdAt = new Date()): Run {
    const run: Run = {
      id: randomUUID(),
      organizationId: of.organizationId,
      workflowId: of.id,
      workflowVersion: of.version,
      status,
      input: {},
      output: null,
      error: null,
      attempts: status === 'queued' ? 0 : 1,
      timeoutMs: 60_000,
      jobId: randomUUID(),
      triggeredBy: { type: 'user', id: 'user-1' },
      parentRunId: null,
      depth: 0,
      retryOf: null,
      retriedBy: null,
      concurrency: null,
      createdAt,
      startedAt: status === 'queued' ? null : createdAt,
      finishedAt: isRunFinished({ status }) ? new Date() : null,
      steps: [
        { ...pendingStep('fetch'), status: status === 'running' ? 'succeeded' : 'pending' },
        { ...pendingStep('summarize'), status: status === 'running' ? 'running' : 'pending' },
      ],
    };
    runs.runs.push(run);
    return run;
  }

  describe('run', () => {
    it('records a queued run with one pending step per definition step, leaving the transaction to the kind, and settles it', async () => {
      const wf = workflow({ timeoutMs: 5000 });

      const answered = await service.run(ORG, {
        workflowId: wf.id,
        input: { day: '2026-01-01' },
        waitSeconds: 3,
        triggeredBy: { type: 'user', id: 'user-7' },
      });

      expect(jobs.enqueued).toHaveLength(1);
      const { submission, inTransaction } = jobs.enqueued[0];
      // No concurrency limit: the kind records it in one statement, or in a transaction where it needs one.
      expect(inTransaction).toBe(false);
      expect(submission.record).toEqual({
        id: expect.any(String),
        organizationId: ORG,
        workflowId: wf.id,
        workflowVersion: 4,
        status: 'queued',
        input: { day: '2026-01-01' },
        output: null,
        error: null,
        attempts: 0,
        timeoutMs: 5000,
        jobId: expect.any(String),
        triggeredBy: { type: 'user', id: 'user-7' },
        parentRunId: null,
        depth: 0,
        retryOf: null,
        retriedBy: null,
        concurrency: null,
        createdAt: expect.any(Date),
        startedAt: null,
        finishedAt: null,
        steps: ['fetch', 'summarize'].map(pendingStep),
      });
      // Without concurrency, no place is taken.
      expect(submission.place).toBeUndefined();
      // The job's lease covers the run's timeout.
      expect(submission.sendOptions).toEqual({ leaseSeconds: 65, retryLimit: 5, heartbeatSeconds: 10 });
      expect(submission.idempotency).toBeUndefined();
      expect(jobs.settled).toEqual([{ submitted: { record: submission.record, created: true }, labels: {}, waitSeconds: 3 }]);
      expect(answered).toBe(submission.record);
      expect(await runs.findById(answered.id)).toBe(answered);
    });

    it('gives a run the default timeout when the definition has none, and passes the Idempotency-Key on', async () => {
      const wf = workflow();

      await service.run(ORG, {
        workflowId: wf.id,
        input: undefined,
        waitSeconds: 0,
        idempotencyKey: 'key-1',
        triggeredBy: { type: 'user', id: 'user-1' },
      });

      const { submission } = jobs.enqueued[0];
      expect(submission.record).toMatchObject({ timeoutMs: 3_600_000, input: null });
      expect(submission.sendOptions.leaseSeconds).toBe(3660);
      expect(submission.idempotency).toEqual({ organizationId: ORG, scope: `workflow:${wf.id}`, key: 'key-1', body: { input: undefined } });
    });

    it("refuses input that fails the workflow's inputSchema with VALIDATION_FAILED, queuing nothing", async () => {
      const wf = workflow({
        inputSchema: { type: 'object', required: ['day'], properties: { day: { type: 'string' } }, additionalProperties: false },
      });

      const error = await domainError(
        service.run(ORG, { workflowId: wf.id, input: { day: 7 }, waitSeconds: 0, triggeredBy: { type: 'user', id: 'user-1' } }),
      );

      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.message).toBe("The input of workflow 'Nightly report' is not valid");
      expect(error.details).toEqual([expect.objectContaining({ path: expect.stringMatching(/^input/) })]);
      expect(jobs.enqueued).toHaveLength(0);
      expect(runs.runs).toHaveLength(0);
    });

    it("answers WORKFLOW_NOT_FOUND for another organization's workflow", async () => {
      const wf = workflow({}, OTHER_ORG);

      const error = await domainError(
        service.run(ORG, { workflowId: wf.id, input: {}, waitSeconds: 0, triggeredBy: { type: 'user', id: 'user-1' } }),
      );

      expect(error.code).toBe('WORKFLOW_NOT_FOUND');
      expect(jobs.enqueued).toHaveLength(0);
    });
  });

  describe('cancel', () => {
    it('cancels a running run and hands the canceled record to RunJobs', async () => {
      const run = storedRun(workflow(), 'running');

      const canceled = await service.cancel(principal(), run.workflowId, run.id);

      expect(canceled).toMatchObject({ id: run.id, status: 'canceled', error: CANCELED });
      expect(canceled.steps.map((s) => s.status)).toEqual(['succeeded', 'canceled']);
      expect(runs.cancels).toEqual([{ id: run.id, error: CANCELED }]);
      expect(jobs.canceled_).toEqual([{ record: canceled, labels: {} }]);
      expect(audit.entries).toEqual([
        {
          organizationId: ORG,
          action: 'run.canceled',
          target: { type: 'run', id: run.id, name: null },
          changes: { after: { status: 'canceled', workflowId: run.workflowId, workflowVersion: run.workflowVersion } },
        },
      ]);
    });

    it('cancels a queued run', async () => {
      const run = storedRun(workflow(), 'queued');

      await expect(service.cancel(principal(), run.workflowId, run.id)).resolves.toMatchObject({ status: 'canceled' });
      expect(jobs.canceled_).toHaveLength(1);
    });

    it.each(['succeeded', 'failed', 'canceled', 'timed_out'] as const)(
      'refuses a %s run with NOT_CANCELABLE naming its status',
      async (status) => {
        const run = storedRun(workflow(), status);

        const error = await domainError(service.cancel(principal(), run.workflowId, run.id));

        expect(error.code).toBe('NOT_CANCELABLE');
        expect(error.message).toBe(`The run is already ${status} and cannot be canceled`);
        expect(jobs.canceled_).toHaveLength(0);
        expect(audit.entries).toEqual([]);
      },
    );

    it("answers RUN_NOT_FOUND for another organization's run, canceling nothing", async () => {
      const run = storedRun(workflow({}, OTHER_ORG), 'running');

      const error = await domainError(service.cancel(principal(), run.workflowId, run.id));

      expect(error.code).toBe('RUN_NOT_FOUND');
      expect(run.status).toBe('running');
      expect(jobs.canceled_).toHaveLength(0);
    });
  });

  describe('get', () => {
    it("answers the organization's run, and RUN_NOT_FOUND for another organization's or another workflow's", async () => {
      const own = storedRun(workflow(), 'succeeded');
      const foreign = storedRun(workflow({}, OTHER_ORG), 'succeeded');

      await expect(service.get(principal(), own.workflowId, own.id)).resolves.toBe(own);
      expect((await domainError(service.get(principal(), foreign.workflowId, foreign.id))).code).toBe('RUN_NOT_FOUND');
      expect((await domainError(service.get(principal(OTHER_ORG), own.workflowId, own.id))).code).toBe('RUN_NOT_FOUND');
      expect((await domainError(service.get(principal(), randomUUID(), own.id))).code).toBe('RUN_NOT_FOUND');
    });
  });

  describe('history', () => {
    it('answers WORKFLOW_NOT_FOUND for a workflow that never existed (or is of another organization)', async () => {
      const foreign = workflow({}, OTHER_ORG);

      expect((await domainError(service.history(principal(), randomUUID(), { limit: 10 }, {}))).code).toBe('WORKFLOW_NOT_FOUND');
      expect((await domainError(service.history(principal(), foreign.id, { limit: 10 }, {}))).code).toBe('WORKFLOW_NOT_FOUND');
    });

    it('answers the runs of a deleted workflow, newest first, with the filter applied', async () => {
      const wf = workflow();
      const older = storedRun(wf, 'failed', new Date('2026-01-01T00:00:00Z'));
      const newer = storedRun(wf, 'succeeded', new Date('2026-01-02T00:00:00Z'));
      storedRun(workflow(), 'succeeded');
      await workflowRows.delete(ORG, wf.id);

      const all = await service.history(principal(), wf.id, { limit: 10 }, {});
      const failed = await service.history(principal(), wf.id, { limit: 10 }, { status: 'failed' });

      expect(all.data.map((r) => r.id)).toEqual([newer.id, older.id]);
      expect(failed.data.map((r) => r.id)).toEqual([older.id]);
    });
  });
});
