import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { RunResult, RunSignals } from '../../../queue/durable-jobs';
import { Coalescer } from '../../../shared/batching/coalescer';
import { ExpressionFailure, ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { canceled, CANCELED, Failure, failed, Outcome } from '../../../shared/jobs/outcome';
import { AgentSteps } from '../../agents/application/agent-steps';
import { Agent } from '../../agents/domain/agent';
import { CapabilityRunner, isRetryable, PluginConfigs } from '../../plugins/application/capability-runner';
import { StepDefinition, WorkflowDefinition } from '../domain/definition';
import { nextSteps, Run, StepStatus } from '../domain/run';
import { RunRepository, StepWrite, WorkflowRepository } from '../domain/workflow.repository';
import { RunJobs } from './run-jobs';

/** Steps of one run in flight at once. */
const MAX_PARALLEL_STEPS = 8;
const ACTION_TIMEOUT_MS = 30_000;
const DEFAULT_BACKOFF_MS = 1000;
/** Largest value an expression (input, if, output) may produce, as JSON: the request body limit. */
const MAX_EXPRESSION_OUTPUT_BYTES = 1024 * 1024;

type StepResult = { status: 'succeeded'; output: unknown } | { status: 'failed'; error: Failure } | { status: 'skipped' | 'canceled' };

/** The state of one run while a worker holds it. */
interface RunState {
  run: Run;
  definition: WorkflowDefinition;
  status: Map<string, StepStatus>;
  outputs: Map<string, unknown>;
  /** Aborted on cancel, timeout, a lost lease, or a failed step. */
  stop: AbortController;
  agents: Map<string, Promise<Agent | null>>;
  pluginConfigs: PluginConfigs;
}

/**
 * The worker side of workflow runs. A job names a run; the worker takes it up (`running`),
 * resumes from the steps already committed (a step that succeeded is never run again; one
 * that was in flight runs again with the same idempotency key `<runId>:<stepId>`), runs the
 * ready steps in parallel, commits each step's result as it ends, and finishes the run.
 * Step writes are guarded on the run still `running`, so a cancel always wins.
 */
@Injectable()
export class RunEngine implements OnModuleInit {
  private readonly definitions = new Map<string, Promise<WorkflowDefinition | null>>();
  private readonly stepWrites = new Coalescer<StepWrite, boolean>((writes) => this.runs.writeSteps(writes));

  constructor(
    private readonly jobs: RunJobs,
    private readonly runs: RunRepository,
    private readonly workflows: WorkflowRepository,
    private readonly agentSteps: AgentSteps,
    private readonly runner: CapabilityRunner,
    private readonly expressions: ExpressionSandbox,
  ) {}

  onModuleInit(): void {
    this.jobs.work((run, signals) => this.execute(run, signals));
  }

  /** Runs a started run to its end; answers its outcome, or null when a cancel or another worker takes over. */
  async execute(run: Run, { cancel, lease }: RunSignals): Promise<RunResult> {
    const definition = await this.definition(run);
    if (!definition) return failed('WORKFLOW_NOT_FOUND', 'The workflow version is gone');
    const left = run.startedAt!.getTime() + run.timeoutMs - Date.now();
    if (left <= 0) return { status: 'timed_out', error: runTimedOut(run) };

    const timeout = AbortSignal.timeout(left);
    const state: RunState = {
      run,
      definition,
      // A step in flight when its worker died runs again.
      status: new Map(run.steps.map((s) => [s.id, s.status === 'running' ? 'pending' : s.status])),
      outputs: new Map(run.steps.filter((s) => s.status === 'succeeded').map((s) => [s.id, s.output])),
      stop: new AbortController(),
      agents: new Map(),
      pluginConfigs: this.runner.configs(),
    };
    const stopAll = () => state.stop.abort();
    for (const signal of [cancel, timeout, lease]) signal.addEventListener('abort', stopAll, { once: true });
    let failure: Failure | null;
    try {
      failure = await this.runSteps(state);
    } finally {
      for (const signal of [cancel, timeout, lease]) signal.removeEventListener('abort', stopAll);
    }

    // Canceled through the API (already recorded), or the lease is gone (another worker resumes it).
    if (cancel.aborted || (lease.aborted && !timeout.aborted)) return null;
    if (timeout.aborted) return { status: 'timed_out', error: runTimedOut(run) };
    if (failure) return { status: 'failed', error: failure };
    const output = await this.output(state);
    return 'error' in output ? { status: 'failed', error: output.error } : { status: 'succeeded', output: output.value };
  }

  /** Runs the graph to its end; answers the failure that stopped it, if one did. */
  private async runSteps(state: RunState): Promise<Failure | null> {
    const { run, definition } = state;
    const inflight = new Map<string, Promise<void>>();
    let failure: Failure | null = null;
    // Not a step's failure but the service's (the database went away): the run stops, then its job is tried again.
    let thrown: { error: unknown } | null = null;
    const crash = (error: unknown) => {
      thrown ??= { error };
      state.stop.abort();
    };
    const stopped = new Promise<void>((resolve) => state.stop.signal.addEventListener('abort', () => resolve(), { once: true }));
    while (!state.stop.signal.aborted) {
      const { ready, skip } = nextSteps(definition.steps, state.status);
      if (skip.length) {
        const applied = await Promise.all(skip.map((stepId) => this.stepWrites.add({ runId: run.id, stepId, status: 'skipped' }))).catch(
          (error: unknown) => {
            crash(error);
            return [false];
          },
        );
        if (applied.includes(false)) break;
        for (const id of skip) state.status.set(id, 'skipped');
        continue;
      }
      for (const id of ready) {
        if (inflight.size >= MAX_PARALLEL_STEPS) break;
        const step = definition.steps.find((s) => s.id === id)!;
        state.status.set(id, 'running');
        const task = this.runStep(state, step).then((result) => {
          state.status.set(id, result.status);
          if (result.status === 'succeeded') state.outputs.set(id, result.output);
          if (result.status === 'failed' && !failure) {
            failure = { code: 'STEP_FAILED', message: `Step '${id}' failed: ${result.error.code}: ${result.error.message}` };
            state.stop.abort();
          }
        }, crash);
        inflight.set(
          id,
          task.finally(() => inflight.delete(id)),
        );
      }
      if (!inflight.size) break;
      await Promise.race([...inflight.values(), stopped]);
    }
    // Whatever still runs was aborted with the run: let it end before the run is recorded.
    await Promise.allSettled([...inflight.values()]);
    if (thrown) throw (thrown as { error: unknown }).error;
    return failure;
  }

  private async runStep(state: RunState, step: StepDefinition): Promise<StepResult> {
    const { run } = state;
    const signal = state.stop.signal;
    const context = { input: run.input, steps: Object.fromEntries([...state.outputs].map(([id, output]) => [id, { output }])) };
    const write = (change: Omit<StepWrite, 'runId' | 'stepId'>) => this.stepWrites.add({ runId: run.id, stepId: step.id, ...change });

    if (step.if !== undefined) {
      const condition = await this.evaluate(run.organizationId, step.if, context, signal);
      if ('error' in condition) return this.recordFailure(write, { code: condition.error.code, message: `if: ${condition.error.message}` });
      if (!condition.value) return (await write({ status: 'skipped' })) ? { status: 'skipped' } : { status: 'canceled' };
    }
    let input: unknown = run.input;
    if (step.input !== undefined) {
      const evaluated = await this.evaluate(run.organizationId, step.input, context, signal);
      if ('error' in evaluated)
        return this.recordFailure(write, { code: evaluated.error.code, message: `input: ${evaluated.error.message}` });
      input = evaluated.value;
    }

    const agent = step.agent ? await this.agent(state, step.agent) : null;
    if (step.agent && !agent)
      return this.recordFailure(write, { code: 'AGENT_NOT_FOUND', message: `Agent ${step.agent} no longer exists` });
    const previous = run.steps.find((s) => s.id === step.id);
    const executionId = agent ? (previous?.executionId ?? randomUUID()) : null;
    const maxAttempts = step.retry?.maxAttempts ?? agent?.maxAttempts ?? 1;
    const backoffMs = step.retry?.backoffMs ?? DEFAULT_BACKOFF_MS;
    const timeoutMs = step.timeoutMs ?? agent?.timeoutMs ?? ACTION_TIMEOUT_MS;

    let outcome: Outcome;
    for (let attempt = 1; ; attempt++) {
      if (!(await write({ status: 'running', attempts: (previous?.attempts ?? 0) + attempt, input, executionId })))
        return { status: 'canceled' };
      outcome = agent
        ? await this.agentSteps.attempt({
            agent,
            executionId: executionId!,
            runId: run.id,
            stepId: step.id,
            input,
            timeoutMs,
            pluginConfig: await state.pluginConfigs.get(run.organizationId, agent.kind),
            cancel: signal,
          })
        : await this.runner.run({
            kind: 'actions',
            qualified: step.action!,
            organizationId: run.organizationId,
            pluginConfig: await state.pluginConfigs.get(run.organizationId, step.action!),
            config: step.with ?? {},
            input,
            timeoutMs,
            idempotencyKey: `${run.id}:${step.id}`,
            cancel: signal,
            context: { runId: run.id, stepId: step.id },
          });
      if (outcome.status === 'succeeded' || !isRetryable(outcome) || attempt >= maxAttempts || signal.aborted) break;
      const retried = await sleep(backoffMs * 2 ** (attempt - 1), true, { signal }).catch(() => false);
      if (!retried) break;
    }
    if (agent) await this.agentSteps.finish(agent, executionId!, signal.aborted && outcome.status !== 'succeeded' ? canceled() : outcome);
    // Stopped with the run: the run's end marks the step canceled.
    if (outcome.status === 'canceled' || (signal.aborted && outcome.status !== 'succeeded')) return { status: 'canceled' };
    if (outcome.status === 'succeeded') {
      return (await write({ status: 'succeeded', output: outcome.output }))
        ? { status: 'succeeded', output: outcome.output }
        : { status: 'canceled' };
    }
    return this.recordFailure(write, outcome.error);
  }

  private async recordFailure(
    write: (change: Omit<StepWrite, 'runId' | 'stepId'>) => Promise<boolean>,
    error: Failure,
  ): Promise<StepResult> {
    return (await write({ status: 'failed', error })) ? { status: 'failed', error } : { status: 'canceled' };
  }

  /** The run's output: its `output` expression, or every step's output by id. */
  private async output(state: RunState): Promise<{ value: unknown } | { error: Failure }> {
    const outputs = Object.fromEntries(state.outputs);
    if (state.definition.output === undefined) return { value: outputs };
    const context = { input: state.run.input, steps: Object.fromEntries([...state.outputs].map(([id, output]) => [id, { output }])) };
    const result = await this.evaluate(state.run.organizationId, state.definition.output, context, new AbortController().signal);
    return 'error' in result ? { error: { code: result.error.code, message: `output: ${result.error.message}` } } : result;
  }

  /**
   * An expression's value, or its failure (EXPRESSION_FAILED or EXPRESSION_TIMEOUT: final, the
   * same context fails the same way). A stopped run answers a failure its caller discards; a
   * sandbox that cannot evaluate at all throws, and the run's job is tried again.
   */
  private async evaluate(
    organizationId: string,
    expression: string,
    context: unknown,
    signal: AbortSignal,
  ): Promise<{ value: unknown } | { error: Failure }> {
    try {
      const options = { organizationId, signal, maxOutputBytes: MAX_EXPRESSION_OUTPUT_BYTES };
      return { value: await this.expressions.evaluate(expression, context, options) };
    } catch (error) {
      if (error instanceof ExpressionFailure) return { error: { code: error.code, message: error.message } };
      if (signal.aborted) return { error: CANCELED };
      throw error;
    }
  }

  /** Versions never change: each is read once per process. */
  private definition(run: Run): Promise<WorkflowDefinition | null> {
    const key = `${run.workflowId}:${run.workflowVersion}`;
    let cached = this.definitions.get(key);
    if (!cached) {
      cached = this.workflows.version(run.workflowId, run.workflowVersion).then((v) => v?.definition ?? null);
      cached.catch(() => this.definitions.delete(key));
      this.definitions.set(key, cached);
    }
    return cached;
  }

  private agent(state: RunState, id: string): Promise<Agent | null> {
    if (!state.agents.has(id)) state.agents.set(id, this.agentSteps.agent(state.run.organizationId, id));
    return state.agents.get(id)!;
  }
}

function runTimedOut(run: Run): Failure {
  return { code: 'RUN_TIMEOUT', message: `The run did not finish within ${run.timeoutMs} ms` };
}
