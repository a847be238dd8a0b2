import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Job, JobResult } from 'pg-boss';
import { JobQueue } from '../../../queue/job-queue';
import { Signals } from '../../../queue/signals';
import { Coalescer } from '../../../shared/batching/coalescer';
import { ExpressionFailure, ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { AgentSteps } from '../../agents/application/agent-steps';
import { Agent } from '../../agents/domain/agent';
import { CallOutcome, CapabilityRunner, isRetryable } from '../../plugins/application/capability-runner';
import { StepDefinition, WorkflowDefinition } from '../domain/definition';
import { Failure, nextSteps, Run, StepStatus } from '../domain/run';
import { RunOutcome, RunRepository, StepWrite, WorkflowRepository } from '../domain/workflow.repository';
import { RunMetrics } from './run-metrics';
import { RUN_CANCELED, RUN_FINISHED, RUN_QUEUE, RunJob } from './run-job';

/** Runs one worker loop takes at a time. */
const BATCH_SIZE = 8;
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
  pluginConfigs: Map<string, Promise<Record<string, unknown> | null>>;
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
  private readonly logger = new Logger('RunEngine');
  private readonly running = new Map<string, AbortController>();
  private readonly definitions = new Map<string, Promise<WorkflowDefinition | null>>();
  private readonly stepWrites = new Coalescer<StepWrite, boolean>((writes) => this.runs.writeSteps(writes));
  private readonly finishes = new Coalescer<RunOutcome, Run | null>((outcomes) => this.runs.finish(outcomes));

  constructor(
    private readonly queue: JobQueue,
    private readonly signals: Signals,
    private readonly runs: RunRepository,
    private readonly workflows: WorkflowRepository,
    private readonly agentSteps: AgentSteps,
    private readonly runner: CapabilityRunner,
    private readonly metrics: RunMetrics,
    private readonly expressions: ExpressionSandbox,
  ) {}

  onModuleInit(): void {
    this.queue.register<RunJob>({ name: RUN_QUEUE, batchSize: BATCH_SIZE, handler: (jobs) => this.handle(jobs) });
    this.signals.on(RUN_CANCELED, (id) => this.running.get(id)?.abort('canceled'));
  }

  async handle(jobs: Array<Job<RunJob>>): Promise<JobResult[]> {
    let started: Run[];
    try {
      started = await this.runs.start(jobs.map((job) => job.data.runId));
    } catch (error) {
      this.logger.warn(`Runs not started: ${(error as Error).message}`);
      return jobs.map((job) => ({ id: job.id, status: 'failed', output: { message: (error as Error).message } }));
    }
    const byId = new Map(started.map((run) => [run.id, run]));
    return Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        const run = byId.get(job.data.runId);
        if (!run) return { id: job.id, status: 'completed' };
        try {
          await this.execute(run, job.signal);
          return { id: job.id, status: 'completed' };
        } catch (error) {
          // The database went away mid-run: what was committed stays, the rest runs again.
          this.logger.warn(`Run ${run.id} interrupted: ${(error as Error).message}`);
          return { id: job.id, status: 'failed', output: { message: (error as Error).message } };
        }
      }),
    );
  }

  private async execute(run: Run, lease: AbortSignal): Promise<void> {
    const definition = await this.definition(run);
    if (!definition)
      return this.finish(run, { status: 'failed', error: { code: 'WORKFLOW_NOT_FOUND', message: 'The workflow version is gone' } });
    const left = run.startedAt!.getTime() + run.timeoutMs - Date.now();
    if (left <= 0) return this.finish(run, { status: 'timed_out', error: runTimedOut(run) });

    const cancel = new AbortController();
    const timeout = AbortSignal.timeout(left);
    const state: RunState = {
      run,
      definition,
      // A step in flight when its worker died runs again.
      status: new Map(run.steps.map((s) => [s.id, s.status === 'running' ? 'pending' : s.status])),
      outputs: new Map(run.steps.filter((s) => s.status === 'succeeded').map((s) => [s.id, s.output])),
      stop: new AbortController(),
      agents: new Map(),
      pluginConfigs: new Map(),
    };
    const stopAll = () => state.stop.abort();
    for (const signal of [cancel.signal, timeout, lease]) signal.addEventListener('abort', stopAll, { once: true });
    this.running.set(run.id, cancel);
    let failure: Failure | null;
    try {
      failure = await this.runSteps(state);
    } finally {
      this.running.delete(run.id);
      for (const signal of [cancel.signal, timeout, lease]) signal.removeEventListener('abort', stopAll);
    }

    // Canceled through the API (already recorded), or the lease is gone (another worker resumes it).
    if (cancel.signal.aborted || (lease.aborted && !timeout.aborted)) return;
    if (timeout.aborted) return this.finish(run, { status: 'timed_out', error: runTimedOut(run) });
    if (failure) return this.finish(run, { status: 'failed', error: failure });
    const output = await this.output(state);
    return this.finish(run, 'error' in output ? { status: 'failed', error: output.error } : { status: 'succeeded', output: output.value });
  }

  /** Runs the graph to its end; answers the failure that stopped it, if one did. */
  private async runSteps(state: RunState): Promise<Failure | null> {
    const { run, definition } = state;
    const inflight = new Map<string, Promise<void>>();
    let failure: Failure | null = null;
    const stopped = new Promise<void>((resolve) => state.stop.signal.addEventListener('abort', () => resolve(), { once: true }));
    while (!state.stop.signal.aborted) {
      const { ready, skip } = nextSteps(definition.steps, state.status);
      if (skip.length) {
        const applied = await Promise.all(skip.map((stepId) => this.stepWrites.add({ runId: run.id, stepId, status: 'skipped' })));
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
        });
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
    return failure;
  }

  private async runStep(state: RunState, step: StepDefinition): Promise<StepResult> {
    const { run } = state;
    const signal = state.stop.signal;
    const context = { input: run.input, steps: Object.fromEntries([...state.outputs].map(([id, output]) => [id, { output }])) };
    const write = (change: Omit<StepWrite, 'runId' | 'stepId'>) => this.stepWrites.add({ runId: run.id, stepId: step.id, ...change });

    if (step.if !== undefined) {
      const condition = await this.evaluate(step.if, context, signal);
      if ('error' in condition) return this.recordFailure(write, { code: condition.error.code, message: `if: ${condition.error.message}` });
      if (!condition.value) return (await write({ status: 'skipped' })) ? { status: 'skipped' } : { status: 'canceled' };
    }
    let input: unknown = run.input;
    if (step.input !== undefined) {
      const evaluated = await this.evaluate(step.input, context, signal);
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

    let outcome: CallOutcome;
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
            pluginConfig: await this.pluginConfig(state, agent.kind),
            cancel: signal,
          })
        : await this.runner.run({
            kind: 'actions',
            qualified: step.action!,
            pluginConfig: await this.pluginConfig(state, step.action!),
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
    const result = await this.evaluate(state.definition.output, context, new AbortController().signal);
    return 'error' in result ? { error: { code: result.error.code, message: `output: ${result.error.message}` } } : result;
  }

  /**
   * An expression's value, or its failure (EXPRESSION_FAILED or EXPRESSION_TIMEOUT: final, the
   * same context fails the same way). A stopped run answers a failure its caller discards; a
   * sandbox that cannot evaluate at all throws, and the run's job is tried again.
   */
  private async evaluate(expression: string, context: unknown, signal: AbortSignal): Promise<{ value: unknown } | { error: Failure }> {
    try {
      const options = { signal, maxOutputBytes: MAX_EXPRESSION_OUTPUT_BYTES };
      return { value: await this.expressions.evaluate(expression, context, options) };
    } catch (error) {
      if (error instanceof ExpressionFailure) return { error: { code: error.code, message: error.message } };
      if (signal.aborted) return { error: { code: 'CANCELED', message: 'The run was stopped' } };
      throw error;
    }
  }

  private async finish(run: Run, outcome: { status: RunOutcome['status']; output?: unknown; error?: Failure }): Promise<void> {
    const finished = await this.finishes.add({
      id: run.id,
      output: outcome.output ?? null,
      status: outcome.status,
      error: outcome.error ?? null,
    });
    if (finished) {
      this.metrics.finished(finished);
      this.signals.publish(RUN_FINISHED, run.id, finished);
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

  /** Once per plugin and run: `qualified` is an action or an agent kind. */
  private pluginConfig(state: RunState, qualified: string): Promise<Record<string, unknown> | null> {
    const slug = qualified.split('.', 1)[0];
    if (!state.pluginConfigs.has(slug)) state.pluginConfigs.set(slug, this.runner.pluginConfig(state.run.organizationId, slug));
    return state.pluginConfigs.get(slug)!;
  }
}

function runTimedOut(run: Run): Failure {
  return { code: 'RUN_TIMEOUT', message: `The run did not finish within ${run.timeoutMs} ms` };
}

function canceled(): CallOutcome {
  return { status: 'canceled', error: { code: 'CANCELED', message: 'The run was stopped' } };
}
