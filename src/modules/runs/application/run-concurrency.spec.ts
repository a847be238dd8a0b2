import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { OrganizationShares } from '../../../shared/fairness/organization-shares';
import { Failure } from '../../../shared/jobs/outcome';
import { pendingStep, Run, RunStatus } from '../domain/run';
import { InMemoryRunRepository } from '../domain/run.repository.fake';
import { overLimit, RunConcurrency } from './run-concurrency';
import { RunJobs } from './run-jobs';

const ORG = 'org-1';
const WORKFLOW = 'workflow-1';

/** Hands places over as RunJobs does, recording the runs it would send. */
class AdmittingRunJobs {
  readonly sent: string[] = [];
  constructor(private readonly runs: InMemoryRunRepository) {}
  async admit(workflowId: string, key: string, limit: number): Promise<{ admitted: number; free: number }> {
    const { admitted, free } = await this.runs.admit(workflowId, key, limit);
    this.sent.push(...admitted.map((r) => r.id));
    return { admitted: admitted.length, free };
  }
}

describe('RunConcurrency', () => {
  let sandbox: ExpressionSandbox;
  let runs: InMemoryRunRepository;
  let jobs: AdmittingRunJobs;
  let concurrency: RunConcurrency;
  let canceled: Array<{ id: string; reason: Failure }>;
  let clock: number;

  beforeAll(() => {
    sandbox = new ExpressionSandbox(
      { expressions: { threads: 1, heapMb: 64, timeLimitMs: 1000, inline: true }, shareOverrides: {} } as unknown as AppConfig,
      new OrganizationShares({ shareOverrides: {} } as unknown as AppConfig),
    );
  });
  afterAll(() => sandbox.onModuleDestroy());

  beforeEach(() => {
    runs = new InMemoryRunRepository();
    jobs = new AdmittingRunJobs(runs);
    concurrency = new RunConcurrency(sandbox, runs, jobs as unknown as RunJobs);
    canceled = [];
    clock = Date.parse('2030-01-01T00:00:00Z');
  });

  /** A new run of the key, not recorded yet. */
  const newRun = (key = 'acme', limit = 2): Run => ({
    id: randomUUID(),
    organizationId: ORG,
    workflowId: WORKFLOW,
    workflowVersion: 1,
    status: 'queued',
    input: {},
    output: null,
    error: null,
    attempts: 0,
    timeoutMs: 60_000,
    jobId: randomUUID(),
    triggeredBy: { type: 'user', id: 'user-1' },
    parentRunId: null,
    depth: 0,
    concurrency: { key, limit, waitsForPlace: false },
    retryOf: null,
    retriedBy: null,
    createdAt: new Date((clock += 1000)),
    startedAt: null,
    finishedAt: null,
    steps: [pendingStep('a')],
  });
  /** A run recorded as `place` left it, then moved to `status`. */
  const recorded = async (policy: { limit: number; onLimit?: 'queue' | 'cancelNew' | 'cancelOldest' }, status: RunStatus = 'running') => {
    const run = await concurrency.place(newRun('acme', policy.limit), policy, cancel);
    if (!run.concurrency!.waitsForPlace) run.status = status;
    await runs.insert(run);
    return run;
  };
  const cancel = async (run: { id: string; organizationId: string; workflowId: string }, reason: Failure) => {
    canceled.push({ id: run.id, reason });
    return (await runs.cancel(run.organizationId, run.workflowId, run.id, reason)) !== null;
  };

  describe('keyOf', () => {
    const keyOf = (key: string | undefined, input: unknown) => concurrency.keyOf(ORG, { limit: 1, key }, input);
    const refused = async (key: string, input: unknown): Promise<DomainError> => {
      const error = await keyOf(key, input).then(
        () => new Error('expected a refusal'),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: 'concurrency.key' })] });
      return error as DomainError;
    };

    it("is '' without a key expression, and the expression's result over { input } as a string", async () => {
      expect(await keyOf(undefined, { customer: 'acme' })).toBe('');
      expect(await keyOf('input.customer', { customer: 'acme' })).toBe('acme');
      expect(await keyOf('input.n', { n: 42 })).toBe('42');
      expect(await keyOf('input.region', { region: { eu: true } })).toBe('{"eu":true}');
    });

    it('refuses a key with no value, one past 200 characters, and one that fails, with the reason', async () => {
      expect((await refused('input.customer', {})).message).toMatch(/no value/);
      expect((await refused('input.customer', { customer: 'x'.repeat(201) })).message).toMatch(/201 characters; at most 200/);
      expect((await refused('$error("no customer")', {})).message).toMatch(/no customer/);
    });
  });

  describe('place', () => {
    it('gives a free place under the claim of the key, and leaves a run beyond the limit waiting on no job', async () => {
      const policy = { limit: 2 };
      const [first, second] = [await recorded(policy), await recorded(policy)];
      expect([first.concurrency!.waitsForPlace, second.concurrency!.waitsForPlace]).toEqual([false, false]);
      expect(first.jobId).not.toBeNull();
      const third = await recorded(policy);
      expect(third).toMatchObject({ jobId: null, concurrency: { key: 'acme', limit: 2, waitsForPlace: true } });
      expect(runs.claims).toEqual(Array(3).fill(`${WORKFLOW}:acme`));
      // Another key has places of its own.
      const other = await concurrency.place(newRun('globex'), policy, cancel);
      expect(other.concurrency!.waitsForPlace).toBe(false);
    });

    it('hands a freed place to the oldest waiting run before a new one', async () => {
      const policy = { limit: 1 };
      const first = await recorded(policy);
      const waiting = await recorded(policy);
      await runs.cancel(ORG, WORKFLOW, first.id, { code: 'CANCELED', message: 'by hand' });
      // A hand-over missed: the new run gives the place to the run that waited first.
      const newer = await recorded(policy);
      expect(jobs.sent).toEqual([waiting.id]);
      expect(waiting.concurrency!.waitsForPlace).toBe(false);
      expect(newer.concurrency!.waitsForPlace).toBe(true);
    });

    it('cancels the oldest run holding a place with cancelOldest, with the reason naming the new run', async () => {
      const policy = { limit: 2, onLimit: 'cancelOldest' as const };
      const oldest = await recorded(policy, 'waiting');
      await recorded(policy);
      const newer = await concurrency.place(newRun('acme', 2), policy, cancel);
      expect(newer.concurrency!.waitsForPlace).toBe(false);
      expect(canceled).toEqual([
        {
          id: oldest.id,
          reason: {
            code: 'CONCURRENCY_LIMIT',
            message: `Canceled for the newer run ${newer.id} with the concurrency key 'acme' (limit 2, onLimit cancelOldest)`,
          },
        },
      ]);
    });

    it('leaves the new run waiting when the oldest ended before it could be canceled', async () => {
      const policy = { limit: 1, onLimit: 'cancelOldest' as const };
      await recorded(policy);
      const newer = await concurrency.place(newRun('acme', 1), policy, async () => false);
      expect(newer.concurrency!.waitsForPlace).toBe(true);
    });

    it('leaves a run beyond the limit with cancelNew waiting, for the caller to cancel with overLimit', async () => {
      const policy = { limit: 1, onLimit: 'cancelNew' as const };
      await recorded(policy);
      const refused = await concurrency.place(newRun('acme', 1), policy, cancel);
      expect(refused.concurrency!.waitsForPlace).toBe(true);
      expect(canceled).toEqual([]);
      expect(overLimit(refused.concurrency!)).toEqual({
        code: 'CONCURRENCY_LIMIT',
        message: "1 run(s) with the concurrency key 'acme' were in progress (limit 1, onLimit cancelNew)",
      });
    });
  });
});
