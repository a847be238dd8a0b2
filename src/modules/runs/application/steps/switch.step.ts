import { Injectable } from '@nestjs/common';
import { NOT_TAKEN } from '../../domain/run';
import { StepDefinition, WORKFLOW_LIMITS } from '../../../workflows/domain/definition';
import { StepAnswer, StepContext, StepKind } from './step-kind';

const BRANCH = { type: 'array', minItems: 1, maxItems: WORKFLOW_LIMITS.steps, items: { type: 'string' } };

/**
 * `{ "switch": { "cases": [ { "when": "<JSONata>", "steps": ["a"] } ], "default": ["b"] } }`: the
 * first case that holds runs its steps; the steps of the others are skipped with the reason,
 * and what needs only them is skipped too. Its output names the case it took.
 */
@Injectable()
export class SwitchStep implements StepKind {
  readonly key = 'switch';
  readonly schema = {
    type: 'object',
    additionalProperties: false,
    required: ['cases'],
    properties: {
      cases: {
        type: 'array',
        minItems: 1,
        maxItems: WORKFLOW_LIMITS.switchCases,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['when', 'steps'],
          properties: { when: { type: 'string', minLength: 1, maxLength: 10000 }, steps: BRANCH },
        },
      },
      default: BRANCH,
    },
  };
  readonly callsOut = false;

  problems() {
    return [];
  }

  expressions(step: StepDefinition) {
    return step.switch!.cases.map((c, i) => ({ path: `switch.cases[${i}].when`, expression: c.when }));
  }

  decides(step: StepDefinition): string[] {
    return [...step.switch!.cases.flatMap((c) => c.steps), ...(step.switch!.default ?? [])];
  }

  async run({ step, evaluate }: StepContext): Promise<StepAnswer> {
    const { cases, default: otherwise } = step.switch!;
    let taken: { case: number | 'default' | null; steps: string[] } = { case: null, steps: [] };
    for (const [i, c] of cases.entries()) {
      const held = await evaluate(c.when);
      if ('error' in held)
        return { status: 'failed', error: { code: held.error.code, message: `switch.cases[${i}].when: ${held.error.message}` } };
      if (held.value) {
        taken = { case: i, steps: c.steps };
        break;
      }
    }
    if (taken.case === null && otherwise) taken = { case: 'default', steps: otherwise };
    const chose = taken.case === null ? 'no case held' : taken.case === 'default' ? 'took the default' : `took case ${taken.case}`;
    const notTaken = this.decides(step)
      .filter((id) => !taken.steps.includes(id))
      .map((id) => ({ id, reason: `${NOT_TAKEN}: switch '${step.id}' ${chose}` }));
    return { status: 'succeeded', output: taken, notTaken };
  }
}
