import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Submitted } from '../../../queue/durable-jobs';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { CANCELED } from '../../../shared/jobs/outcome';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { decodeIndexCursor, encodeIndexCursor, Page, PageRequest } from '../../../shared/pagination/cursor';
import { JournalTurn } from '../../plugins/domain/agent-loop';
import { TranscriptRepository, TranscriptTotals } from '../domain/transcript.repository';
import { AgentDelta, AgentDeltas } from './agent-deltas';
import { assertRetryable, Execution, HistoryFilter, Trigger } from '../domain/execution';
import { ExecutionRepository } from '../domain/execution.repository';
import { AgentsService } from './agents.service';
import { ExecutionJobs, jobOptions } from './execution-jobs';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

export interface ExecuteRequest {
  agentId: string;
  input: unknown;
  /** Seconds to wait for the final status; 0 answers at once. */
  waitSeconds: number;
  idempotencyKey?: string;
  triggeredBy: Trigger;
  /** The execution this one retries. */
  retryOf?: string;
}

export function executionNotFound(): DomainError {
  return new DomainError('EXECUTION_NOT_FOUND', 'No such execution of this agent');
}

@Injectable()
export class ExecutionsService {
  constructor(
    private readonly agents: AgentsService,
    private readonly executions: ExecutionRepository,
    private readonly jobs: ExecutionJobs,
    private readonly transcripts: TranscriptRepository,
    private readonly deltas: AgentDeltas,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * Records and queues the execution durably (row and job in one transaction), then waits up
   * to `waitSeconds` for it to finish. Answers the execution as it then stands; `onQueued` hears
   * of it once it is recorded (before the wait).
   */
  async execute(organizationId: string, request: ExecuteRequest, onQueued?: (execution: Execution) => void): Promise<Execution> {
    const { submitted, kind } = await this.enqueue(organizationId, request);
    onQueued?.(submitted.record);
    return this.jobs.settle(submitted, { kind }, request.waitSeconds);
  }

  /** The execution as it stands, of any agent of the organization (null: none such). */
  find(organizationId: string, agentId: string, id: string): Promise<Execution | null> {
    return this.executions.find(organizationId, agentId, id);
  }

  async get(caller: Principal, agentId: string, id: string): Promise<Execution> {
    const execution = await this.executions.find(caller.organizationId, agentId, id);
    if (!execution) throw executionNotFound();
    return execution;
  }

  /** For a live stream of execution `id`: `check` again whenever it changed, in any process (see `DurableJobKind.watch`). */
  watch<T>(id: string, timeoutMs: number, check: () => Promise<T | null>): Promise<T | null> {
    return this.jobs.watch(id, timeoutMs, check);
  }

  /** The execution with every committed turn of its conversation (none for an agent that calls no tools). */
  async withTurns(caller: Principal, agentId: string, id: string): Promise<{ execution: Execution; turns: JournalTurn[] }> {
    const execution = await this.get(caller, agentId, id);
    return { execution, turns: await this.transcripts.load(execution.id) };
  }

  /** The execution, its conversation's totals (null without one) and its first turns. */
  async detail(
    caller: Principal,
    agentId: string,
    id: string,
    firstTurns: number,
  ): Promise<{ execution: Execution; totals: TranscriptTotals | null; first: Page<JournalTurn> }> {
    const execution = await this.get(caller, agentId, id);
    const totals = await this.transcripts.totals(execution.id);
    const first = totals ? await this.turnPage(execution, { limit: firstTurns }) : { data: [], nextCursor: null };
    return { execution, totals, first };
  }

  /** A page of the execution's conversation, in turn order; EXECUTION_NOT_FOUND unless it is the organization's. */
  async transcript(caller: Principal, agentId: string, id: string, page: PageRequest): Promise<Page<JournalTurn>> {
    return this.turnPage(await this.get(caller, agentId, id), page);
  }

  private async turnPage(execution: Execution, page: PageRequest): Promise<Page<JournalTurn>> {
    const after = page.cursor ? decodeIndexCursor(page.cursor) : 0;
    const turns = await this.transcripts.page(execution.id, after, page.limit + 1);
    const more = turns.length > page.limit;
    const data = more ? turns.slice(0, page.limit) : turns;
    return { data, nextCursor: more ? encodeIndexCursor(data[data.length - 1].turn) : null };
  }

  /** The model's text of the execution as it streams, in this process (see AgentDeltas). */
  followDeltas(id: string, listener: (delta: AgentDelta) => void): () => void {
    return this.deltas.follow(id, listener);
  }

  /** One agent's executions; AGENT_NOT_FOUND unless it is the caller's organization's. */
  async history(caller: Principal, agentId: string, page: PageRequest, filter: Omit<HistoryFilter, 'agentId'>): Promise<Page<Execution>> {
    await this.agents.get(caller.organizationId, agentId);
    return this.executions.history(caller.organizationId, page, { ...filter, agentId });
  }

  /** The caller's organization's executions across agents (`filter.agentId` narrows to one; an unknown one finds none). */
  async list(caller: Principal, page: PageRequest, filter: HistoryFilter): Promise<Page<Execution>> {
    return this.executions.history(caller.organizationId, page, filter);
  }

  /**
   * Queued or running -> canceled; a running plugin call is aborted through its signal. The
   * audit event is written in the cancel's transaction, once the guarded update canceled it.
   */
  async cancel(caller: Principal, agentId: string, id: string): Promise<Execution> {
    const agent = await this.agents.get(caller.organizationId, agentId);
    const change = async () => {
      const execution = await this.executions.cancel(caller.organizationId, agentId, id, CANCELED);
      if (execution) {
        await this.audit.record({
          organizationId: execution.organizationId,
          action: 'execution.canceled',
          target: { type: 'execution', id: execution.id, name: agent.name },
          changes: { after: { status: execution.status, agentId: agent.id } },
        });
      }
      return execution;
    };
    const canceled = await this.jobs.cancel(change, { kind: agent.kind });
    if (!canceled) {
      const execution = await this.get(caller, agentId, id);
      throw new DomainError('NOT_CANCELABLE', `The execution is already ${execution.status} and cannot be canceled`);
    }
    return canceled;
  }

  /**
   * A new execution of the agent with a finished execution's input (`retryOf` on it, `retriedBy`
   * on the old one), waited for up to `waitSeconds`; the agent as it is now runs it.
   */
  async retry(
    caller: Principal,
    agentId: string,
    id: string,
    request: Pick<ExecuteRequest, 'waitSeconds' | 'triggeredBy'>,
  ): Promise<Execution> {
    const { submitted, kind } = await this.enqueueRetry(caller.organizationId, agentId, id, request.triggeredBy);
    return this.jobs.settle(submitted, { kind }, request.waitSeconds);
  }

  /** The retry, its job and the old execution's `retriedBy` commit together, or not at all. */
  @Transactional()
  private async enqueueRetry(
    organizationId: string,
    agentId: string,
    id: string,
    triggeredBy: Trigger,
  ): Promise<{ submitted: Submitted<Execution>; kind: string; agentName: string }> {
    const old = await this.executions.find(organizationId, agentId, id);
    if (!old) throw executionNotFound();
    assertRetryable(old);
    const enqueued = await this.enqueue(organizationId, { agentId, input: old.input, waitSeconds: 0, triggeredBy, retryOf: old.id });
    // Guarded on it not being retried yet: of two retries at once, the second waits for the first to commit, then fails here.
    if (!(await this.executions.markRetried(organizationId, old.id, enqueued.submitted.record.id))) {
      assertRetryable((await this.executions.find(organizationId, agentId, id)) ?? old);
      throw executionNotFound(); // deleted meanwhile, with its agent
    }
    await this.audit.record({
      organizationId,
      action: 'execution.retried',
      target: { type: 'execution', id: old.id, name: enqueued.agentName },
      changes: { after: { retriedBy: enqueued.submitted.record.id, agentId } },
    });
    return enqueued;
  }

  /** The agent read, then its execution recorded and queued (see DurableJobKind.enqueue: one statement, or in the caller's transaction). */
  private async enqueue(
    organizationId: string,
    request: ExecuteRequest,
  ): Promise<{ submitted: Submitted<Execution>; kind: string; agentName: string }> {
    // The agent's plugin is installed: uninstall is refused while an agent uses it.
    const agent = await this.agents.get(organizationId, request.agentId);
    if (agent.inputSchema) assertTenantSchema(agent.inputSchema, request.input, 'input', `The input of agent '${agent.name}'`);
    const id = timeOrderedId();
    const submitted = await this.jobs.enqueue({
      record: {
        id,
        organizationId,
        agentId: agent.id,
        status: 'queued',
        input: request.input ?? null,
        output: null,
        error: null,
        attempts: 0,
        jobId: randomUUID(),
        triggeredBy: request.triggeredBy,
        retryOf: request.retryOf ?? null,
        retriedBy: null,
        createdAt: new Date(),
        startedAt: null,
        finishedAt: null,
      },
      sendOptions: jobOptions(agent),
      idempotency: request.idempotencyKey
        ? { organizationId, scope: `agent:${agent.id}`, key: request.idempotencyKey, body: { input: request.input } }
        : undefined,
    });
    return { submitted, kind: agent.kind, agentName: agent.name };
  }
}
