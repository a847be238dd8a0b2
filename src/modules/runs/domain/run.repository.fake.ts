import { randomUUID } from 'node:crypto';
import { Failure } from '../../../shared/jobs/outcome';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { isRunFinished, Run, RunItem } from './run';
import { AdmittedRun, HistoryFilter, RunRepository, StepWrite, UnfinishedRun, WaitingKey } from './run.repository';
import { Statement } from '../../../shared/jobs/statement';

/** For a method no unit spec has needed yet: the spec that does fakes it here. */
function notFaked(method: string): never {
  throw new Error(`${method} is not faked yet`);
}

/**
 * Runs in memory, for unit specs. It keeps the runs it is given, not copies, so a spec can
 * compare what it answers with `toBe`. `cancel` is guarded on the run being unfinished, as the
 * SQL one is. Step writes are recorded, not applied to the stored runs: a write applies unless
 * its run was canceled. The worker's other methods (`start`, `wait`, `finish`, `unfinished`, map items,
 * `moveToJob`, `abandon`) are not faked yet.
 */
export class InMemoryRunRepository extends RunRepository {
  readonly runs: Run[] = [];
  /** Every `cancel` asked, whether or not it canceled the run. */
  readonly cancels: Array<{ id: string; error: Failure }> = [];
  /** Every step write, in order, whether or not it applied. */
  readonly writes: StepWrite[] = [];
  /** Runs whose step writes no longer apply: those `cancel` canceled, and those a spec adds (a cancel recorded elsewhere). */
  readonly canceledRuns = new Set<string>();
  /** The database went away for the writes this matches: `writeSteps` throws. */
  failWrite: ((write: StepWrite) => boolean) | null = null;
  /** PostgreSQL refuses a value in the writes this matches (as jsonb refuses `\u0000`): `writeSteps` throws a 22P05. */
  refuseWrite: ((write: StepWrite) => boolean) | null = null;

  /** What was written for one step, in order. */
  stepWrites(stepId: string): StepWrite[] {
    return this.writes.filter((w) => w.stepId === stepId);
  }

  async insert(run: Run): Promise<void> {
    this.runs.push(run);
  }

  /** As `insert`, each; the statement alongside (the queue's) is not run here. */
  async insertAll(runs: Run[], _alongside: Statement): Promise<void> {
    this.runs.push(...runs);
  }

  async markRetried(organizationId: string, id: string, retryId: string): Promise<boolean> {
    const run = this.runs.find((r) => r.organizationId === organizationId && r.id === id);
    if (!run || !isRunFinished(run) || run.retriedBy) return false;
    run.retriedBy = retryId;
    return true;
  }

  async find(organizationId: string, workflowId: string, id: string): Promise<Run | null> {
    return this.runs.find((r) => r.organizationId === organizationId && r.workflowId === workflowId && r.id === id) ?? null;
  }

  findLive(organizationId: string, workflowId: string, id: string): Promise<Run | null> {
    return this.find(organizationId, workflowId, id);
  }

  async findById(id: string): Promise<Run | null> {
    return this.runs.find((r) => r.id === id) ?? null;
  }

  async history(organizationId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Run>> {
    const data = this.runs
      .filter((r) => r.organizationId === organizationId && (!filter.workflowId || r.workflowId === filter.workflowId))
      .filter((r) => (!filter.status || r.status === filter.status) && (!filter.since || r.createdAt >= filter.since))
      .filter((r) => (!filter.until || r.createdAt < filter.until) && (!filter.id || r.id === filter.id))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .slice(0, page.limit)
      .map((r) => ({ ...r, steps: [] }));
    return { data, nextCursor: null };
  }

  async writeSteps(writes: StepWrite[]): Promise<boolean[]> {
    if (writes.some((w) => this.failWrite?.(w))) throw new Error('Connection terminated unexpectedly');
    if (writes.some((w) => this.refuseWrite?.(w)))
      throw Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05', detail: '\\u0000 cannot be converted to text.' });
    this.writes.push(...writes);
    return writes.map((w) => !this.canceledRuns.has(w.runId));
  }

  async cancel(organizationId: string, workflowId: string, id: string, error: Failure): Promise<Run | null> {
    this.cancels.push({ id, error });
    const run = await this.find(organizationId, workflowId, id);
    if (!run || isRunFinished(run)) return null;
    Object.assign(run, { status: 'canceled', error, finishedAt: new Date() });
    run.steps = run.steps.map((s) =>
      s.status === 'running' || s.status === 'waiting'
        ? { ...s, status: 'canceled' }
        : s.status === 'pending'
          ? { ...s, status: 'skipped' }
          : s,
    );
    this.canceledRuns.add(id);
    return { ...run };
  }

  async start(): Promise<Run[]> {
    notFaked('start');
  }

  async wait(): Promise<Run | null> {
    notFaked('wait');
  }

  async finish(): Promise<Array<Run | null>> {
    notFaked('finish');
  }

  async unfinished(): Promise<UnfinishedRun[]> {
    notFaked('unfinished');
  }

  async moveToJob(): Promise<boolean> {
    notFaked('moveToJob');
  }

  async abandon(): Promise<Run | null> {
    notFaked('abandon');
  }

  async waitingJobs(): Promise<string[]> {
    notFaked('waitingJobs');
  }

  async awakened(): Promise<boolean> {
    notFaked('awakened');
  }

  async unfinishedChildren(): Promise<Array<{ id: string; workflowId: string; organizationId: string }>> {
    return [];
  }

  async beginItems(): Promise<boolean> {
    notFaked('beginItems');
  }

  async openItems(): Promise<RunItem[]> {
    notFaked('openItems');
  }

  async allItems(): Promise<RunItem[]> {
    notFaked('allItems');
  }

  async writeItems(): Promise<boolean[]> {
    notFaked('writeItems');
  }

  async itemPage(): Promise<RunItem[]> {
    notFaked('itemPage');
  }

  /** Every claim taken, in order (`workflowId:key`). */
  readonly claims: string[] = [];

  async claimPlaces(workflowId: string, key: string): Promise<void> {
    this.claims.push(`${workflowId}:${key}`);
  }

  async admit(workflowId: string, key: string, limit: number): Promise<{ admitted: AdmittedRun[]; free: number }> {
    const ofKey = this.runs
      .filter((r) => r.workflowId === workflowId && r.concurrency?.key === key && !isRunFinished(r))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    const held = ofKey.filter((r) => !r.concurrency!.waitsForPlace).length;
    const next = ofKey.filter((r) => r.status === 'queued' && r.concurrency!.waitsForPlace).slice(0, Math.max(0, limit - held));
    for (const run of next) Object.assign(run, { jobId: randomUUID(), concurrency: { ...run.concurrency!, waitsForPlace: false } });
    const admitted = next.map((r) => ({ id: r.id, organizationId: r.organizationId, jobId: r.jobId!, timeoutMs: r.timeoutMs }));
    return { admitted, free: Math.max(0, limit - held - next.length) };
  }

  async oldestHolder(workflowId: string, key: string): Promise<{ id: string; organizationId: string } | null> {
    const oldest = this.runs
      .filter((r) => r.workflowId === workflowId && r.concurrency?.key === key && !r.concurrency.waitsForPlace && !isRunFinished(r))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())[0];
    return oldest ? { id: oldest.id, organizationId: oldest.organizationId } : null;
  }

  async waitingKeys(): Promise<WaitingKey[]> {
    notFaked('waitingKeys');
  }
}
