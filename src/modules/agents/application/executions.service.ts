import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { awaitFinal } from '../../../queue/await-final';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { IdempotencyKeys } from '../../../shared/idempotency/idempotency-keys';
import { assertTenantSchema } from '../../../shared/json-schema/json-schema.validator';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Execution, HistoryFilter, isFinished, Trigger } from '../domain/execution';
import { ExecutionRepository } from '../domain/execution.repository';
import { AgentMetrics } from './agent-metrics';
import { AgentsService } from './agents.service';
import { AGENT_QUEUE, EXECUTION_CANCELED, EXECUTION_FINISHED, ExecutionJob, jobOptions } from './execution-job';

export interface ExecuteRequest {
  agentId: string;
  input: unknown;
  /** Seconds to wait for the final status; 0 answers at once. */
  waitSeconds: number;
  idempotencyKey?: string;
  triggeredBy: Trigger;
}

export function executionNotFound(): DomainError {
  return new DomainError('EXECUTION_NOT_FOUND', 'No such execution of this agent');
}

@Injectable()
export class ExecutionsService {
  constructor(
    private readonly agents: AgentsService,
    private readonly executions: ExecutionRepository,
    private readonly idempotency: IdempotencyKeys,
    private readonly queue: JobQueue,
    private readonly signals: Signals,
    private readonly metrics: AgentMetrics,
  ) {}

  /**
   * Records and queues the execution durably (row and job in one transaction), then waits up
   * to `waitSeconds` for it to finish. Answers the execution as it then stands.
   */
  async execute(organizationId: string, request: ExecuteRequest): Promise<Execution> {
    const { execution, created, kind } = await this.enqueue(organizationId, request);
    if (created) this.metrics.reached(kind, 'queued');
    return awaitFinal(this.signals, this.queue, {
      record: execution,
      created,
      queue: AGENT_QUEUE,
      finished: EXECUTION_FINISHED,
      id: execution.id,
      waitSeconds: request.waitSeconds,
      isFinal: isFinished,
      read: () => this.executions.findById(execution.id),
    });
  }

  async get(caller: Principal, agentId: string, id: string): Promise<Execution> {
    const execution = await this.executions.find(caller.organizationId, agentId, id);
    if (!execution) throw executionNotFound();
    return execution;
  }

  async history(caller: Principal, agentId: string, page: PageRequest, filter: HistoryFilter): Promise<Page<Execution>> {
    await this.agents.get(caller.organizationId, agentId);
    return this.executions.history(caller.organizationId, agentId, page, filter);
  }

  /** Queued or running -> canceled; a running plugin call is aborted through its signal. */
  async cancel(caller: Principal, agentId: string, id: string): Promise<Execution> {
    const canceled = await this.executions.cancel(caller.organizationId, agentId, id);
    if (!canceled) {
      const execution = await this.get(caller, agentId, id);
      throw new DomainError('NOT_CANCELABLE', `The execution is already ${execution.status} and cannot be canceled`);
    }
    const agent = await this.agents.get(caller.organizationId, agentId);
    this.metrics.finished(agent.kind, canceled);
    this.signals.publish(EXECUTION_CANCELED, id);
    this.signals.publish(EXECUTION_FINISHED, id, canceled);
    return canceled;
  }

  @Transactional()
  private async enqueue(
    organizationId: string,
    request: ExecuteRequest,
  ): Promise<{ execution: Execution; created: boolean; kind: string }> {
    // The agent's plugin is installed: uninstall is refused while an agent uses it.
    const agent = await this.agents.get(organizationId, request.agentId);
    if (agent.inputSchema) assertTenantSchema(agent.inputSchema, request.input, 'input', `The input of agent '${agent.name}'`);

    const id = randomUUID();
    if (request.idempotencyKey) {
      const scope = { organizationId, scope: `agent:${agent.id}`, key: request.idempotencyKey, body: { input: request.input } };
      const earlier = await this.idempotency.claim(scope, id);
      if (earlier) {
        const execution = await this.executions.findById(earlier);
        if (execution) return { execution, created: false, kind: agent.kind };
      }
    }
    const execution: Execution = {
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
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
    await this.executions.insert(execution);
    await this.queue.send(AGENT_QUEUE, { executionId: id } satisfies ExecutionJob, { ...jobOptions(agent), id: execution.jobId! });
    return { execution, created: true, kind: agent.kind };
  }
}
