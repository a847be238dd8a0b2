import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DomainError } from '../../../../shared/errors/domain-error';
import { MAX_NESTING_DEPTH } from '../../../../shared/jobs/nesting';
import { failed } from '../../../../shared/jobs/outcome';
import { DefinitionContext, StepDefinition } from '../../../workflows/domain/definition';
import { isRunFinished, Run } from '../../domain/run';
import { RunRepository } from '../../domain/run.repository';
import { StepAnswer, StepContext, StepKind } from './step-kind';

/**
 * How long the parent's worker waits for a child it just started before it lets go: a child
 * that ends that soon (one quick step) costs no parking and no second pickup of the parent.
 */
const CHILD_GRACE_MS = 250;

/** Starting a child run (RunsService): looked up when first used, since the service checks definitions with these kinds. */
export abstract class ChildRuns {
  /**
   * Records and queues a run of `workflowId` for the parent (a repeat of `key` answers the run it
   * started), and waits up to `waitMs` for it to end; answers it as it then stands.
   */
  abstract startChild(parent: Run, workflowId: string, input: unknown, key: string, waitMs: number): Promise<Run>;
}

/**
 * `{ "workflow": "<workflow id>", "input": "<JSONata>", "detach": false }`: starts a run of another
 * workflow of the organization as a child (its `parentRunId` is this run). By default the step
 * waits without holding a worker, the child's end wakes the run, and the step takes the child's
 * output, or fails with CHILD_RUN_FAILED; with `detach` the step answers `{ runId }` at once.
 */
@Injectable()
export class WorkflowStep implements StepKind {
  readonly key = 'workflow';
  readonly schema = { type: 'string', format: 'uuid' };
  readonly fields = { detach: { type: 'boolean' } };
  readonly callsOut = false;
  private children?: ChildRuns;

  constructor(
    private readonly runs: RunRepository,
    private readonly moduleRef: ModuleRef,
  ) {}

  problems(step: StepDefinition, at: string, context: DefinitionContext) {
    return context.workflowExists(step.workflow!)
      ? []
      : [{ path: `${at}.workflow`, message: `step '${step.id}': no workflow ${step.workflow} in this organization` }];
  }

  async run({ run, step, record, input, callId }: StepContext): Promise<StepAnswer> {
    const wait = !step.detach;
    let child: Run | null;
    if (record?.childRunId) {
      child = await this.runs.findById(record.childRunId);
      if (!child) return { ...failed('RUN_NOT_FOUND', `The child run ${record.childRunId} is gone`), childRunId: record.childRunId };
    } else {
      if (run.depth + 1 > MAX_NESTING_DEPTH)
        return failed('WORKFLOW_DEPTH', `A run ${run.depth} levels deep cannot start another (at most ${MAX_NESTING_DEPTH} levels)`);
      try {
        child = await this.childRuns().startChild(run, step.workflow!, input, `${run.id}:${callId}`, wait ? CHILD_GRACE_MS : 0);
      } catch (error) {
        // The child's workflow is gone, or the input does not fit its schema: the step's failure.
        if (error instanceof DomainError) return failed(error.code, error.message);
        throw error;
      }
    }
    const childRunId = child.id;
    if (!wait) return { status: 'succeeded', output: { runId: childRunId }, childRunId };
    if (!isRunFinished(child)) return { status: 'waiting', resumeAt: null, childRunId };
    if (child.status === 'succeeded') return { status: 'succeeded', output: child.output, childRunId };
    const why = child.error ? `: ${child.error.code}: ${child.error.message}` : '';
    return { ...failed('CHILD_RUN_FAILED', `The child run ${child.id} ended ${child.status}${why}`), childRunId };
  }

  private childRuns(): ChildRuns {
    return (this.children ??= this.moduleRef.get(ChildRuns, { strict: false }));
  }
}
