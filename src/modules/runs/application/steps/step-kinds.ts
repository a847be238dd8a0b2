import { Injectable } from '@nestjs/common';
import { StepRules } from '../../../workflows/application/step-rules';
import { kindOf, StepDefinition } from '../../../workflows/domain/definition';
import { ActionStep } from './action.step';
import { AgentStep } from './agent.step';
import { MapStep } from './map.step';
import { SleepStep } from './sleep.step';
import { StepKind } from './step-kind';
import { SwitchStep } from './switch.step';
import { WaitStep } from './wait.step';
import { WorkflowStep } from './workflow.step';

/** The step kinds the engine runs, in the order their names are listed in problems. */
@Injectable()
export class StepKinds {
  readonly all: readonly StepKind[];

  constructor(
    agent: AgentStep,
    action: ActionStep,
    sleep: SleepStep,
    branch: SwitchStep,
    map: MapStep,
    workflow: WorkflowStep,
    wait: WaitStep,
    rules: StepRules,
  ) {
    this.all = [agent, action, sleep, branch, map, workflow, wait];
    map.useKinds(this);
    // Definitions are checked against these kinds.
    rules.use(this.all);
  }

  /** The kind of a saved (so valid) step. */
  of(step: StepDefinition): StepKind {
    const kind = kindOf(step, this.all);
    if (!kind) throw new Error(`Step '${step.id}' has no kind this service runs`);
    return kind as StepKind;
  }
}

export const STEP_KIND_PROVIDERS = [AgentStep, ActionStep, SleepStep, SwitchStep, MapStep, WorkflowStep, WaitStep, StepKinds];
