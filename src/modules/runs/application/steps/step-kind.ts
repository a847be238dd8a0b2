import { Failure, Outcome } from '../../../../shared/jobs/outcome';
import { PluginConfigs } from '../../../plugins/application/capability-runner';
import { StepDefinition, StepKindRules } from '../../../workflows/domain/definition';
import { Run, StepRun } from '../../domain/run';
import { WaitingFor } from '../../domain/wait';

/** What a step's expressions see: the run input, the steps it may read, and what the kind adds. */
export interface StepScope {
  input: unknown;
  steps: Record<string, { output?: unknown; error?: Failure }>;
  /** The run's failure, in `onFailure`. */
  error?: Failure;
  /** A map's item and its place, in the map's inner step. */
  item?: unknown;
  index?: number;
}

/** What a step kind's `run()` gets: the narrow view of its run. */
export interface StepContext {
  run: Run;
  step: StepDefinition;
  /** The step's record as committed before this call (its attempts, execution, wait). */
  record: StepRun | undefined;
  /** The attempt this call makes, from 1. */
  attempt: number;
  /** The step's input (its `input` expression's value, or the run input). */
  input: unknown;
  scope: StepScope;
  /** The agent execution of the step, for kinds that keep one. */
  executionId: string | null;
  /** The step's id, or `<step>:<index>` for a map's item: what its calls out are keyed by (`<runId>:<callId>`). */
  callId: string;
  /** Aborted when the run stops (cancel, timeout, a lost lease, another step's failure). */
  signal: AbortSignal;
  pluginConfigs: PluginConfigs;
  /** A JSONata expression over the scope (or another, an item's): its value, or why it failed. */
  evaluate(expression: string, scope?: StepScope): Promise<{ value: unknown } | { error: Failure }>;
  /** A value loaded once per run and worker (an agent's record). */
  memo<T>(key: string, load: () => Promise<T>): Promise<T>;
}

/** Steps a switch does not take, and why. */
export interface NotTaken {
  id: string;
  reason: string;
}

/** What one call of a kind's `run()` answers. */
export type StepAnswer =
  /** Final for this attempt: succeeded (with the branches it did not take), or failed, timed out, canceled. */
  | (Outcome & { notTaken?: NotTaken[]; childRunId?: string })
  /**
   * Go on at `resumeAt` (a sleep), or when what it waits for wakes the run (null: a child run's
   * end): the run lets go of its worker until then.
   */
  | { status: 'waiting'; resumeAt: Date | null; childRunId?: string; waitingFor?: WaitingFor };

/**
 * A kind of step: its rules at save (`StepKindRules`) and how it runs. Adding a kind is one
 * file here and a line in the registry.
 */
export interface StepKind extends StepKindRules {
  /**
   * Whether the step waits for an answer from outside (besides its `resumeAt`, a timeout): each
   * time the run resumes it is asked again, since the answer may be what woke the run.
   */
  readonly answered?: boolean;
  /** Whether the step keeps an agent execution, the same one across its attempts. */
  readonly keepsExecution?: boolean;
  run(context: StepContext): Promise<StepAnswer>;
  /** Attempts when the step sets no `retry` (an agent's own). */
  defaultAttempts?(context: StepContext): Promise<number>;
  /** After the step's final outcome (not after an attempt that is tried again). */
  settle?(context: StepContext, outcome: Outcome): Promise<void>;
}
