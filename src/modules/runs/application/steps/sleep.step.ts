import { Injectable } from '@nestjs/common';
import { DefinitionContext, outlivesRun, StepDefinition, WORKFLOW_LIMITS, WorkflowDefinition } from '../../../workflows/domain/definition';
import { StepAnswer, StepContext, StepKind } from './step-kind';

/**
 * `{ "sleep": { "seconds": 3600 } }` or `{ "sleep": { "until": "<JSONata giving an ISO time>" } }`:
 * a durable wait. The step records when it is due and the run lets go of its worker; a restart
 * or a crash meanwhile does not start the wait over.
 */
@Injectable()
export class SleepStep implements StepKind {
  readonly key = 'sleep';
  readonly schema = {
    type: 'object',
    additionalProperties: false,
    properties: {
      seconds: { type: 'integer', minimum: 1, maximum: WORKFLOW_LIMITS.sleepSeconds },
      until: { type: 'string', minLength: 1, maxLength: 10000 },
    },
  };
  readonly callsOut = false;

  problems(step: StepDefinition, at: string, _context: DefinitionContext, workflow: WorkflowDefinition) {
    const { seconds, until } = step.sleep!;
    if ((seconds === undefined) === (until === undefined))
      return [{ path: `${at}.sleep`, message: `step '${step.id}': sleep needs exactly one of seconds or until` }];
    return seconds === undefined ? [] : outlivesRun(seconds, `${at}.sleep.seconds`, step, workflow);
  }

  expressions(step: StepDefinition) {
    return step.sleep!.until === undefined ? [] : [{ path: 'sleep.until', expression: step.sleep!.until }];
  }

  async run({ step, record, evaluate }: StepContext): Promise<StepAnswer> {
    // Resumed: the time was fixed when the step began.
    let due = record?.status === 'waiting' ? record.resumeAt : null;
    if (!due) {
      const { seconds, until } = step.sleep!;
      if (seconds !== undefined) due = new Date(Date.now() + seconds * 1000);
      else {
        const value = await evaluate(until!);
        if ('error' in value)
          return { status: 'failed', error: { code: value.error.code, message: `sleep.until: ${value.error.message}` } };
        due = typeof value.value === 'string' ? new Date(value.value) : new Date(NaN);
        if (Number.isNaN(due.getTime()))
          return {
            status: 'failed',
            error: { code: 'SLEEP_INVALID', message: `sleep.until gave ${JSON.stringify(value.value) ?? 'nothing'}, not an ISO 8601 time` },
          };
      }
    }
    if (due.getTime() > Date.now()) return { status: 'waiting', resumeAt: due };
    return { status: 'succeeded', output: { until: due.toISOString() } };
  }
}
