import { Injectable } from '@nestjs/common';
import { failed } from '../../../../shared/jobs/outcome';
import { DefinitionContext, outlivesRun, StepDefinition, WORKFLOW_LIMITS, WorkflowDefinition } from '../../../workflows/domain/definition';
import { StepWait, waitingFor } from '../../domain/wait';
import { WaitsService } from '../waits.service';
import { StepAnswer, StepContext, StepKind } from './step-kind';

/** An event's name: what `POST /api/events` sends and a wait names. */
export const EVENT_NAME = '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$';
/** The longest correlation key (an event's, or what a wait's `key` gives). */
export const EVENT_KEY_MAX = 500;

/**
 * `{ "wait": { "for": "approval", "schema": {...}, "approvers": { "roles": ["admin"] } } }` or
 * `{ "wait": { "for": "event", "event": "payment.settled", "key": "<JSONata>" } }`: the step waits,
 * holding no worker, until a person answers it through the API or a system sends the event with
 * its key, or until `timeoutSeconds` (then it fails with WAIT_TIMEOUT, or goes on with
 * `onTimeout: continue`). Its output is the answer: `{ data, by, at }`. The timeout is the step's
 * `resumeAt`, so it fires through the queue's timers whatever restarts meanwhile.
 */
@Injectable()
export class WaitStep implements StepKind {
  readonly key = 'wait';
  readonly schema = {
    type: 'object',
    additionalProperties: false,
    required: ['for'],
    properties: {
      for: { enum: ['approval', 'event'] },
      event: { type: 'string', pattern: EVENT_NAME },
      key: { type: 'string', minLength: 1, maxLength: 10000 },
      schema: { type: 'object' },
      timeoutSeconds: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.waitSeconds },
      onTimeout: { enum: ['fail', 'continue'] },
      approvers: {
        type: 'object',
        additionalProperties: false,
        properties: {
          roles: { type: 'array', uniqueItems: true, maxItems: 2, items: { enum: ['admin', 'member'] } },
          users: { type: 'array', maxItems: WORKFLOW_LIMITS.approverUsers, items: { type: 'string', minLength: 1, maxLength: 320 } },
        },
      },
      selfApproval: { type: 'boolean' },
    },
  };
  readonly callsOut = false;
  readonly answered = true;

  constructor(private readonly waits: WaitsService) {}

  problems(step: StepDefinition, at: string, context: DefinitionContext, workflow: WorkflowDefinition) {
    const wait = step.wait!;
    const problems = [];
    const only = (field: keyof typeof wait, kind: string) => {
      if (wait[field] !== undefined && wait.for !== kind)
        problems.push({ path: `${at}.wait.${field}`, message: `step '${step.id}': ${field} applies to a wait for an ${kind}` });
    };
    if (wait.for === 'event' && wait.event === undefined)
      problems.push({ path: `${at}.wait.event`, message: `step '${step.id}' waits for an event: name it with event` });
    only('event', 'event');
    only('key', 'event');
    only('approvers', 'approval');
    only('selfApproval', 'approval');
    if (wait.schema) problems.push(...context.schemaProblems(wait.schema, `${at}.wait.schema`));
    if (wait.timeoutSeconds !== undefined) problems.push(...outlivesRun(wait.timeoutSeconds, `${at}.wait.timeoutSeconds`, step, workflow));
    return problems;
  }

  expressions(step: StepDefinition) {
    return step.wait!.key === undefined ? [] : [{ path: 'wait.key', expression: step.wait!.key }];
  }

  async run({ run, step, evaluate }: StepContext): Promise<StepAnswer> {
    const definition = step.wait!;
    let key: string | null = null;
    if (definition.for === 'event') {
      const value = definition.key === undefined ? { value: '' } : await evaluate(definition.key);
      if ('error' in value) return failed(value.error.code, `wait.key: ${value.error.message}`);
      const keyOf = typeof value.value === 'string' || typeof value.value === 'number' ? String(value.value) : null;
      if (keyOf === null || keyOf.length > EVENT_KEY_MAX)
        return failed(
          'WAIT_INVALID',
          `wait.key gave ${JSON.stringify(value.value)?.slice(0, 100) ?? 'nothing'}, not a string or number of at most ${EVENT_KEY_MAX} characters`,
        );
      key = keyOf;
    }
    const now = new Date();
    // Once recorded, a wait is what it was (its key, its timeout), whatever resumes it.
    const wait = await this.waits.open({
      runId: run.id,
      stepId: step.id,
      organizationId: run.organizationId,
      workflowId: run.workflowId,
      kind: definition.for,
      eventName: definition.event ?? null,
      eventKey: key,
      schema: definition.schema ?? null,
      approvers: definition.approvers ?? null,
      selfApproval: definition.selfApproval ?? true,
      status: 'pending',
      answer: null,
      createdAt: now,
      timeoutAt: definition.timeoutSeconds ? new Date(now.getTime() + definition.timeoutSeconds * 1000) : null,
    });
    return this.answerOf(step, wait);
  }

  private async answerOf(step: StepDefinition, wait: StepWait): Promise<StepAnswer> {
    if (wait.status === 'answered') return { status: 'succeeded', output: wait.answer };
    const timedOut = wait.status === 'closed' || (wait.timeoutAt !== null && wait.timeoutAt.getTime() <= Date.now());
    if (!timedOut) return { status: 'waiting', resumeAt: wait.timeoutAt, waitingFor: waitingFor(wait) };
    if (wait.status === 'pending' && !(await this.waits.expire(wait.runId, wait.stepId))) {
      // An answer came as it timed out: it counts.
      return this.answerOf(step, (await this.waits.find(wait.runId, wait.stepId))!);
    }
    if (step.wait!.onTimeout === 'continue')
      return { status: 'succeeded', output: { data: null, by: null, at: new Date().toISOString(), timedOut: true } };
    const what = wait.kind === 'approval' ? 'an approval' : `the event '${wait.eventName}'`;
    return failed('WAIT_TIMEOUT', `Step '${step.id}' waited for ${what} until ${wait.timeoutAt?.toISOString()} and none came`);
  }
}
