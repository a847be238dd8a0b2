import { JobRef } from '../../../shared/jobs/job-ref';
import { Statement } from '../../../shared/jobs/statement';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Execution, HistoryFilter, isFinished } from '../domain/execution';
import { ExecutionRepository, StartedAttempt, UnfinishedExecution } from '../domain/execution.repository';

/** What `start` joins from the agent: its kind, config and limits. */
export interface FakeAgentLimits {
  kind: string;
  config: Record<string, unknown>;
  timeoutMs: number;
  maxAttempts: number;
}

/**
 * Executions in memory, for unit specs. Every status change is guarded the way the SQL one
 * is (`finish` and `wait` on `running`, the others on unfinished), and answers copies.
 */
export class InMemoryExecutionRepository extends ExecutionRepository {
  readonly executions = new Map<string, Execution>();
  /** The agents `start` joins, by id. */
  readonly agents = new Map<string, FakeAgentLimits>();

  async insert(execution: Execution): Promise<void> {
    if (this.executions.has(execution.id)) throw new Error(`duplicate execution ${execution.id}`);
    this.executions.set(execution.id, { ...execution });
  }

  /** Inserts them all or none; the statement alongside (the queue's) is not run here. */
  async insertAll(executions: Execution[], _alongside: Statement): Promise<void> {
    const ids = new Set(executions.map((e) => e.id));
    if (ids.size < executions.length || executions.some((e) => this.executions.has(e.id))) throw new Error('duplicate execution');
    for (const execution of executions) this.executions.set(execution.id, { ...execution });
  }

  async markRetried(organizationId: string, id: string, retryId: string): Promise<boolean> {
    const found = this.executions.get(id);
    if (!found || found.organizationId !== organizationId || !isFinished(found) || found.retriedBy) return false;
    found.retriedBy = retryId;
    return true;
  }

  async find(organizationId: string, agentId: string, id: string): Promise<Execution | null> {
    const found = this.executions.get(id);
    return found && found.organizationId === organizationId && found.agentId === agentId ? { ...found } : null;
  }

  async findById(id: string): Promise<Execution | null> {
    const found = this.executions.get(id);
    return found ? { ...found } : null;
  }

  async history(organizationId: string, _page: PageRequest, filter: HistoryFilter): Promise<Page<Execution>> {
    const data = [...this.executions.values()]
      .filter((e) => e.organizationId === organizationId && (!filter.agentId || e.agentId === filter.agentId))
      .filter((e) => (!filter.status || e.status === filter.status) && (!filter.since || e.createdAt >= filter.since))
      .filter((e) => (!filter.until || e.createdAt < filter.until) && (!filter.id || e.id === filter.id))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .map((e) => ({ ...e }));
    return { data, nextCursor: null };
  }

  async start(jobs: JobRef[]): Promise<StartedAttempt[]> {
    const started: StartedAttempt[] = [];
    for (const { id, jobId } of jobs) {
      const execution = this.executions.get(id);
      const agent = execution && this.agents.get(execution.agentId);
      if (!execution || !agent || isFinished(execution) || execution.jobId !== jobId) continue;
      execution.status = 'running';
      execution.attempts += 1;
      execution.startedAt ??= new Date();
      started.push({ execution: { ...execution }, ...agent });
    }
    return started;
  }

  async finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<Execution | null>> {
    return outcomes.map(({ id, outcome }) => {
      const execution = this.executions.get(id);
      if (execution?.status !== 'running') return null;
      execution.status = outcome.status;
      execution.output = 'output' in outcome ? (outcome.output ?? null) : null;
      execution.error = 'error' in outcome ? outcome.error : null;
      execution.finishedAt = new Date();
      return { ...execution };
    });
  }

  async startOwned(execution: Execution): Promise<Execution | null> {
    const found = this.executions.get(execution.id);
    if (!found) {
      this.executions.set(execution.id, { ...execution, status: 'running', attempts: 1, jobId: null });
      return { ...this.executions.get(execution.id)! };
    }
    if (isFinished(found)) return null;
    Object.assign(found, { status: 'running', attempts: found.attempts + 1, input: execution.input });
    return { ...found };
  }

  async wait(id: string, fromJobId: string, toJobId: string, _at: Date, error: Failure | null): Promise<Execution | null> {
    const execution = this.executions.get(id);
    if (!execution || execution.status !== 'running' || execution.jobId !== fromJobId) return null;
    Object.assign(execution, { status: 'waiting', jobId: toJobId, error });
    return { ...execution };
  }

  async cancel(organizationId: string, agentId: string, id: string, error: Failure): Promise<Execution | null> {
    const execution = this.executions.get(id);
    if (!execution || execution.organizationId !== organizationId || execution.agentId !== agentId || isFinished(execution)) {
      return null;
    }
    Object.assign(execution, { status: 'canceled', error, finishedAt: new Date() });
    return { ...execution };
  }

  async unfinished(olderThanMs: number, limit: number): Promise<UnfinishedExecution[]> {
    const before = Date.now() - olderThanMs;
    return [...this.executions.values()]
      .filter((e) => !isFinished(e) && e.triggeredBy.type === 'user' && e.createdAt.getTime() < before)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .slice(0, limit)
      .flatMap((e) => {
        const agent = this.agents.get(e.agentId);
        if (!agent) return [];
        const { kind, maxAttempts, timeoutMs } = agent;
        return [{ id: e.id, organizationId: e.organizationId, kind, jobId: e.jobId, attempts: e.attempts, maxAttempts, timeoutMs }];
      });
  }

  async moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean> {
    const execution = this.executions.get(id);
    if (!execution || isFinished(execution) || execution.jobId !== fromJobId) return false;
    Object.assign(execution, { jobId: toJobId, status: 'queued' });
    return true;
  }

  async abandon(id: string, jobId: string | null, error: Failure): Promise<Execution | null> {
    const execution = this.executions.get(id);
    if (!execution || isFinished(execution) || execution.jobId !== jobId) return null;
    Object.assign(execution, { status: 'failed', error, finishedAt: new Date() });
    return { ...execution };
  }
}
