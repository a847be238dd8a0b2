import { TriggeredByResponse } from '../../shared/auth/triggered-by.response';
import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { FailureResponse } from '../../shared/http/failure.response';
import { ANY_JSON } from '../../shared/http/json-value.schema';
import { Run, RunItem, RunPlace, RUN_STATUSES, RunStatus, StepRun, STEP_STATUSES } from './domain/run';

/** A map step's items by status. */
export class ItemCountsResponse {
  @ApiProperty() total!: number;
  @ApiPropertyOptional() pending?: number;
  @ApiPropertyOptional() running?: number;
  @ApiPropertyOptional() waiting?: number;
  @ApiPropertyOptional() succeeded?: number;
  @ApiPropertyOptional() failed?: number;
  @ApiPropertyOptional() canceled?: number;
}

/** One item of a map step. */
export class RunItemResponse {
  @ApiProperty() index!: number;
  @ApiProperty({ enum: ['pending', 'running', 'waiting', 'succeeded', 'failed', 'canceled'] }) status!: string;
  @ApiProperty() attempts!: number;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) output!: unknown;
  @ApiProperty({ type: FailureResponse, nullable: true }) error!: FailureResponse | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: "An agent item's execution" }) executionId!: string | null;
  @ApiProperty({ type: String, nullable: true }) resumeAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;

  static of(i: RunItem): RunItemResponse {
    return {
      index: i.index,
      status: i.status,
      attempts: i.attempts,
      output: i.output,
      error: i.error,
      executionId: i.executionId,
      resumeAt: i.resumeAt?.toISOString() ?? null,
      startedAt: i.startedAt?.toISOString() ?? null,
      finishedAt: i.finishedAt?.toISOString() ?? null,
    };
  }
}

export class RunItemPageResponse {
  @ApiProperty({ type: [RunItemResponse] }) data!: RunItemResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

/** What a waiting wait step waits for. */
export class WaitingForResponse {
  @ApiProperty({ enum: ['approval', 'event'] }) for!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The event, for an event wait' }) event!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The correlation key its `key` gave, for an event wait' }) key!: string | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    properties: { roles: { type: 'array', items: { type: 'string' } }, users: { type: 'array', items: { type: 'string' } } },
    description: 'Who may answer, for an approval',
  })
  approvers!: { roles?: string[]; users?: string[] } | null;
  @ApiProperty({ type: String, nullable: true, description: 'When it times out' }) timeoutAt!: string | null;
}

/** A step of a waiting run that waits, as a `workflow.run.waiting` event names it. */
export class WaitingStepResponse {
  @ApiProperty() id!: string;
  @ApiProperty({ type: String, nullable: true, description: 'When it goes on by itself (a sleep, a timeout)' }) resumeAt!: string | null;
  @ApiProperty({ type: WaitingForResponse, nullable: true, description: 'What a wait step waits for' })
  waitingFor!: WaitingForResponse | null;
}

export class StepRunResponse {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: STEP_STATUSES }) status!: string;
  @ApiProperty() attempts!: number;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) input!: unknown;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) output!: unknown;
  @ApiProperty({ type: FailureResponse, nullable: true }) error!: FailureResponse | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: "An agent step's execution" }) executionId!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'When a waiting step goes on (a sleep ends, a retry makes its next attempt)' })
  resumeAt!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why a skipped step was skipped',
    example: "not taken: switch 'route' took case 0",
  })
  reason!: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: "A workflow step's child run" }) childRunId!: string | null;
  @ApiProperty({ type: WaitingForResponse, nullable: true, description: 'What a wait step waits (or, canceled, waited) for' })
  waitingFor!: WaitingForResponse | null;
  @ApiPropertyOptional({
    type: ItemCountsResponse,
    description: "A map step's items by status (one run's read); page them at .../steps/:stepId/items",
  })
  items?: ItemCountsResponse;
  @ApiProperty({ type: String, nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;

  static of(s: StepRun): StepRunResponse {
    return {
      id: s.id,
      status: s.status,
      attempts: s.attempts,
      input: s.input,
      output: s.output,
      error: s.error,
      executionId: s.executionId,
      resumeAt: s.resumeAt?.toISOString() ?? null,
      reason: s.reason,
      childRunId: s.childRunId,
      waitingFor: s.waitingFor,
      ...(s.items ? { items: s.items } : {}),
      startedAt: s.startedAt?.toISOString() ?? null,
      finishedAt: s.finishedAt?.toISOString() ?? null,
    };
  }
}

/** A run's place among the runs of its workflow's concurrency key. */
export class RunConcurrencyResponse {
  @ApiProperty({ description: "The key the workflow's concurrency.key gave for its input ('' without one)", example: 'acme' })
  key!: string;
  @ApiProperty({ description: 'Runs with this key in progress at once, as its version said' }) limit!: number;
  @ApiProperty({ description: 'Queued beyond the limit: it starts once a run with its key ends' }) waitsForPlace!: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why it waits, while it does',
    example: "2 run(s) with the concurrency key 'acme' are in progress (limit 2); it starts when one ends",
  })
  reason!: string | null;

  static of({ key, limit, waitsForPlace }: RunPlace): RunConcurrencyResponse {
    const reason = waitsForPlace
      ? `${limit} run(s) with the concurrency key '${key}' are in progress (limit ${limit}); it starts when one ends`
      : null;
    return { key, limit, waitsForPlace, reason };
  }
}

/** A run as the API shows it (lists, and the data of workflow.run.* events, without steps). */
export class RunResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) workflowId!: string;
  @ApiProperty() workflowVersion!: number;
  @ApiProperty({ enum: RUN_STATUSES }) status!: RunStatus;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) input!: unknown;
  @ApiProperty({ ...ANY_JSON, nullable: true, description: 'Any JSON' }) output!: unknown;
  @ApiProperty({ type: FailureResponse, nullable: true }) error!: FailureResponse | null;
  @ApiPropertyOptional({ type: [StepRunResponse], description: 'In definition order; left out of lists' }) steps?: StepRunResponse[];
  @ApiProperty() createdAt!: string;
  @ApiProperty({ type: String, nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: Number, nullable: true }) durationMs!: number | null;
  @ApiProperty({ type: TriggeredByResponse }) triggeredBy!: TriggeredByResponse;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The run whose workflow step started this one' })
  parentRunId!: string | null;
  @ApiPropertyOptional({
    type: [WaitingStepResponse],
    description: 'A waiting run read with its steps (one run, a workflow.run.waiting event): the steps that wait and for what',
  })
  waitingSteps?: WaitingStepResponse[];
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The run this one retries (it took over its kept steps)' })
  retryOf!: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The run that retries this one (a run is retried once)' })
  retriedBy!: string | null;
  @ApiProperty({
    type: RunConcurrencyResponse,
    nullable: true,
    description:
      "Its workflow's concurrency key and whether it waits for a place; null without concurrency. A run canceled by the limit says why in error (CONCURRENCY_LIMIT)",
  })
  concurrency!: RunConcurrencyResponse | null;

  static of(run: Run, withSteps = true): RunResponse {
    const waiting = run.status === 'waiting' ? run.steps.filter((s) => s.status === 'waiting') : [];
    return {
      id: run.id,
      workflowId: run.workflowId,
      workflowVersion: run.workflowVersion,
      status: run.status,
      input: run.input,
      output: run.output,
      error: run.error,
      ...(withSteps ? { steps: run.steps.map(StepRunResponse.of) } : {}),
      createdAt: run.createdAt.toISOString(),
      startedAt: run.startedAt?.toISOString() ?? null,
      finishedAt: run.finishedAt?.toISOString() ?? null,
      durationMs: run.startedAt && run.finishedAt ? run.finishedAt.getTime() - run.startedAt.getTime() : null,
      triggeredBy: run.triggeredBy,
      parentRunId: run.parentRunId,
      ...(waiting.length
        ? { waitingSteps: waiting.map((s) => ({ id: s.id, resumeAt: s.resumeAt?.toISOString() ?? null, waitingFor: s.waitingFor })) }
        : {}),
      retryOf: run.retryOf,
      retriedBy: run.retriedBy,
      concurrency: run.concurrency && RunConcurrencyResponse.of(run.concurrency),
    };
  }
}

/** A run with its steps (one run's GET, a run or cancel answer): `steps` always there. */
export class RunWithStepsResponse extends OmitType(RunResponse, ['steps']) {
  @ApiProperty({ type: [StepRunResponse], description: 'In definition order' }) steps!: StepRunResponse[];

  static of(run: Run): RunWithStepsResponse {
    return RunResponse.of(run, true) as RunWithStepsResponse;
  }
}
