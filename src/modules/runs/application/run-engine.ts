import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { INPUT_BODY_LIMIT_BYTES } from '../../../config/app-config';
import { later, RunResult, RunSignals } from '../../../queue/durable-jobs';
import { Coalescer } from '../../../shared/batching/coalescer';
import { ExpressionFailure, ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { isUnstorableWrite } from '../../../shared/errors/postgres-errors';
import { CANCELED, Failure, failed, Outcome } from '../../../shared/jobs/outcome';
import { storable } from '../../../shared/json/storable';
import { CapabilityRunner, PluginConfigs } from '../../plugins/application/capability-runner';
import { effectiveNeeds, recordedSteps, StepDefinition, WorkflowDefinition } from '../../workflows/domain/definition';
import { isNotTaken, nextSteps, Run, StepGraph, StepRun, StepStatus } from '../domain/run';
import { RunRepository, StepWrite } from '../domain/run.repository';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { RunJobs } from './run-jobs';
import { StepAnswer, StepContext, StepScope } from './steps/step-kind';
import { retryWait } from './steps/retry';
import { StepKinds } from './steps/step-kinds';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

/** Steps of one run in flight at once. */
const MAX_PARALLEL_STEPS = 8;
/** Largest value an expression (input, if, output) may produce, as JSON: the limit of a run's body, so an input passes whole. */
const MAX_EXPRESSION_OUTPUT_BYTES = INPUT_BODY_LIMIT_BYTES;

type StepResult =
  { status: 'succeeded'; output: unknown } | { status: 'failed'; error: Failure } | { status: 'skipped' | 'canceled' | 'waiting' };

/** How a run's steps stopped: a failure, or steps that wait (until `resumeAt`, or an event when null), or done. */
interface Ended {
  failure: Failure | null;
  waits: boolean;
  resumeAt: Date | null;
}

/** A saved definition as the engine walks it, built once per version and process. */
interface Plan {
  definition: WorkflowDefinition;
  graph: StepGraph;
  byId: Map<string, StepDefinition>;
}

/** The state of one run while a worker holds it. */
interface RunState {
  run: Run;
  plan: Plan;
  status: Map<string, StepStatus>;
  /** Each step's record as last committed (or as this worker wrote it). */
  records: Map<string, StepRun>;
  outputs: Map<string, unknown>;
  /** Failed steps' errors (`onError: continue` ones are read by later steps). */
  errors: Map<string, Failure>;
  /** Steps skipped because a switch did not take their branch. */
  notTaken: Set<string>;
  /** Steps waiting for an event (a child run) that this worker found still waiting: not asked again until the run resumes. */
  checked: Set<string>;
  /** Aborted on cancel, timeout or a lost lease. */
  halt: AbortController;
  /** Aborted with `halt`, and when a step fails the run. */
  stop: AbortController;
  memo: Map<string, Promise<unknown>>;
  pluginConfigs: PluginConfigs;
}

/**
 * The worker side of workflow runs. A job names a run; the worker takes it up (`running`),
 * resumes from the steps already committed (a step that succeeded is never run again; one
 * that was in flight runs again with the same idempotency key `<runId>:<stepId>`), runs the
 * ready steps in parallel through their kinds, commits each step's result as it ends, and
 * finishes the run. A step that waits (a sleep, the backoff before another attempt) is
 * committed `waiting` with its time; once nothing else can run, the run answers `later` and
 * lets go of its worker until the earliest of them. Step writes are guarded on the run still
 * `running`, so a cancel always wins.
 */
@Injectable()
export class RunEngine implements OnModuleInit {
  private readonly plans = new Map<string, Promise<Plan | null>>();
  private readonly stepWrites = new Coalescer<StepWrite, boolean | UnstorableWrite>(async (writes) => {
    const applied = await this.writeSteps(writes);
    // Committed (no transaction around it): live streams of these runs may read them now.
    for (const runId of new Set(writes.filter((_, i) => applied[i] === true).map((w) => w.runId))) this.jobs.changed(runId);
    return applied;
  });

  constructor(
    private readonly jobs: RunJobs,
    private readonly runs: RunRepository,
    private readonly workflows: WorkflowRepository,
    private readonly kinds: StepKinds,
    private readonly runner: CapabilityRunner,
    private readonly expressions: ExpressionSandbox,
  ) {}

  onModuleInit(): void {
    this.jobs.work((run, signals) => this.execute(run, signals));
  }

  /** Runs a started run until it ends or waits; null when a cancel or another worker takes over. */
  async execute(run: Run, { cancel, lease }: RunSignals): Promise<RunResult> {
    const plan = await this.plan(run);
    if (!plan) return failed('WORKFLOW_NOT_FOUND', 'The workflow version is gone');
    const deadline = run.startedAt!.getTime() + run.timeoutMs;
    const left = deadline - Date.now();
    if (left <= 0) return { status: 'timed_out', error: runTimedOut(run) };

    const timeout = AbortSignal.timeout(left);
    const state = this.state(run, plan);
    const haltAll = () => state.halt.abort();
    state.halt.signal.addEventListener('abort', () => state.stop.abort(), { once: true });
    for (const signal of [cancel, timeout, lease]) signal.addEventListener('abort', haltAll, { once: true });
    let ended: Ended;
    try {
      // A failure a worker recorded before it died fails the run without running more steps.
      const failure = this.recordedFailure(state);
      ended = failure ? { failure, waits: false, resumeAt: null } : await this.runSteps(state);
      if (ended.failure && plan.definition.onFailure && !state.halt.signal.aborted) {
        const onFailure = await this.runOnFailure(state, plan.definition.onFailure, ended.failure);
        if (onFailure) ended = { failure: ended.failure, waits: true, resumeAt: onFailure };
      }
    } finally {
      for (const signal of [cancel, timeout, lease]) signal.removeEventListener('abort', haltAll);
    }

    // Canceled through the API (already recorded), or the lease is gone (another worker resumes it).
    if (cancel.aborted || (lease.aborted && !timeout.aborted)) return null;
    if (timeout.aborted) return { status: 'timed_out', error: runTimedOut(run) };
    // Waits end at the run's bound at the latest: it then times out.
    if (ended.waits) return later(new Date(Math.min(ended.resumeAt?.getTime() ?? deadline, deadline)));
    if (ended.failure) return { status: 'failed', error: ended.failure };
    const output = await this.output(state);
    return 'error' in output ? { status: 'failed', error: output.error } : { status: 'succeeded', output: output.value };
  }

  private state(run: Run, plan: Plan): RunState {
    const records = new Map(run.steps.map((s) => [s.id, s]));
    return {
      run,
      plan,
      records,
      // A step in flight when its worker died runs again; a waiting one goes on at its time.
      status: new Map(run.steps.map((s) => [s.id, s.status === 'running' ? 'pending' : s.status])),
      outputs: new Map(run.steps.filter((s) => s.status === 'succeeded').map((s) => [s.id, s.output])),
      errors: new Map(run.steps.filter((s) => s.status === 'failed' && s.error).map((s) => [s.id, s.error!])),
      notTaken: new Set(run.steps.filter((s) => s.status === 'skipped' && isNotTaken(s.reason)).map((s) => s.id)),
      checked: new Set(),
      halt: new AbortController(),
      stop: new AbortController(),
      memo: new Map(),
      pluginConfigs: this.runner.configs(),
    };
  }

  /**
   * Runs the graph until nothing more can run now; answers the failure that stopped it, or the
   * earliest time a waiting step goes on.
   */
  private async runSteps(state: RunState): Promise<Ended> {
    const { plan } = state;
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
      const { ready, skip } = nextSteps(plan.graph, state.status, state.notTaken);
      if (skip.length) {
        const applied = await this.skip(state, skip).catch((error: unknown) => {
          crash(error);
          return false;
        });
        if (!applied) break;
        continue;
      }
      for (const id of [...this.due(state), ...ready]) {
        if (inflight.size >= MAX_PARALLEL_STEPS) break;
        if (inflight.has(id)) continue;
        const step = plan.byId.get(id)!;
        state.status.set(id, 'running');
        const task = this.runStep(state, step).then((result) => {
          state.status.set(id, result.status);
          if (result.status === 'succeeded') state.outputs.set(id, result.output);
          if (result.status === 'failed') {
            state.errors.set(id, result.error);
            if (!failure && !plan.graph.continues.has(id)) {
              failure = { code: 'STEP_FAILED', message: `Step '${id}' failed: ${result.error.code}: ${result.error.message}` };
              state.stop.abort();
            }
          }
        }, crash);
        inflight.set(
          id,
          task.finally(() => inflight.delete(id)),
        );
      }
      if (!inflight.size) break;
      // A waiting step that comes due while others run is taken up then.
      const next = inflight.size < MAX_PARALLEL_STEPS ? this.nextResume(state) : null;
      const timer = new AbortController();
      const due = next ? sleep(Math.max(0, next.getTime() - Date.now()), undefined, { signal: timer.signal }).catch(() => undefined) : null;
      await Promise.race([...inflight.values(), stopped, ...(due ? [due] : [])]);
      timer.abort();
    }
    // Whatever still runs was aborted with the run: let it end before the run is recorded.
    await Promise.allSettled([...inflight.values()]);
    if (thrown) throw (thrown as { error: unknown }).error;
    if (failure || state.stop.signal.aborted) return { failure, waits: false, resumeAt: null };
    const waits = [...state.status.values()].includes('waiting');
    return { failure: null, waits, resumeAt: this.nextResume(state) };
  }

  /**
   * Step writes in one statement. When the database refuses a value in them (a NUL or a lone
   * surrogate that got past the boundaries, a value over its size limit), each is written
   * alone, so only the write that holds it answers an UnstorableWrite; the others commit.
   */
  private async writeSteps(writes: StepWrite[]): Promise<Array<boolean | UnstorableWrite>> {
    try {
      return await this.runs.writeSteps(writes);
    } catch (error) {
      if (!isUnstorableWrite(error)) throw error;
      if (writes.length === 1) return [new UnstorableWrite(writes[0], error)];
    }
    const alone = async (w: StepWrite): Promise<boolean | UnstorableWrite> => {
      try {
        return (await this.runs.writeSteps([w]))[0];
      } catch (error) {
        if (isUnstorableWrite(error)) return new UnstorableWrite(w, error);
        throw error;
      }
    };
    return Promise.all(writes.map(alone));
  }

  /** One step write; an UnstorableWrite is thrown (runStep fails the step with it). */
  private async writeStep(write: StepWrite): Promise<boolean> {
    const applied = await this.stepWrites.add(write);
    if (applied instanceof UnstorableWrite) throw applied;
    return applied;
  }

  /** Writes skipped steps with their reasons; false when the run no longer runs. */
  private async skip(state: RunState, skip: Array<{ id: string; reason: string }>): Promise<boolean> {
    const applied = await Promise.all(
      skip.map(({ id, reason }) => this.writeStep({ runId: state.run.id, stepId: id, status: 'skipped', reason })),
    );
    if (applied.includes(false)) return false;
    for (const { id, reason } of skip) {
      state.status.set(id, 'skipped');
      if (isNotTaken(reason)) state.notTaken.add(id);
    }
    return true;
  }

  /**
   * Waiting steps whose time has come, and those waiting for an event (a child's end, an answer)
   * not yet asked since the run resumed.
   */
  private due(state: RunState): string[] {
    const now = Date.now();
    return [...state.status]
      .filter(([id, status]) => {
        if (status !== 'waiting') return false;
        const resumeAt = state.records.get(id)?.resumeAt;
        if (resumeAt && resumeAt.getTime() <= now) return true;
        return !state.checked.has(id) && (!resumeAt || this.kinds.of(state.plan.byId.get(id)!).answered === true);
      })
      .map(([id]) => id);
  }

  /** The earliest time a waiting step goes on; null when none waits for a time. */
  private nextResume(state: RunState): Date | null {
    const times = [...state.status].flatMap(([id, status]) => {
      const resumeAt = status === 'waiting' ? state.records.get(id)?.resumeAt : null;
      return resumeAt ? [resumeAt.getTime()] : [];
    });
    return times.length ? new Date(Math.min(...times)) : null;
  }

  /** The failure of a step a worker recorded before it died (not one that lets the run go on). */
  private recordedFailure(state: RunState): Failure | null {
    for (const [id, error] of state.errors) {
      if (state.plan.graph.continues.has(id) || id === state.plan.definition.onFailure?.id) continue;
      return { code: 'STEP_FAILED', message: `Step '${id}' failed: ${error.code}: ${error.message}` };
    }
    return null;
  }

  /** The workflow's `onFailure` step, once; answers when it goes on if it waits (a retry). */
  private async runOnFailure(state: RunState, step: StepDefinition, error: Failure): Promise<Date | null> {
    const status = state.status.get(step.id);
    if (status !== 'pending' && status !== 'waiting' && status !== 'running') return null;
    if (status === 'waiting' && (state.records.get(step.id)?.resumeAt?.getTime() ?? 0) > Date.now())
      return state.records.get(step.id)!.resumeAt;
    // Its own stop: the step that failed the run stopped the others.
    state.stop = new AbortController();
    state.halt.signal.addEventListener('abort', () => state.stop.abort(), { once: true });
    const result = await this.runStep(state, step, { error });
    return result.status === 'waiting' ? state.records.get(step.id)!.resumeAt : null;
  }

  /**
   * One step through its kind. A value of it the database refuses (its output, its input, a
   * record its kind writes) fails it at once with STEP_OUTPUT_UNSTORABLE: writing it again
   * would fail the same way, and a worker that threw would run the step again and again until
   * the run is lost.
   */
  private async runStep(state: RunState, step: StepDefinition, extra: Partial<StepScope> = {}): Promise<StepResult> {
    const write = async (change: Omit<StepWrite, 'runId' | 'stepId'>) => {
      const applied = await this.writeStep({ runId: state.run.id, stepId: step.id, ...change });
      if (applied) {
        const before = state.records.get(step.id);
        const cleared = { resumeAt: change.resumeAt ?? null, reason: change.reason ?? null, waitingFor: change.waitingFor ?? null };
        state.records.set(step.id, { ...before!, ...change, ...cleared } as StepRun);
      }
      return applied;
    };
    try {
      return await this.stepThrough(state, step, extra, write);
    } catch (error) {
      if (!(error instanceof UnstorableWrite) && !isUnstorableWrite(error)) throw error;
      return this.recordFailure(write, unstorableFailure(error));
    }
  }

  /** One step through its kind: its `if`, its input, its attempts (waiting between them), its record. */
  private async stepThrough(
    state: RunState,
    step: StepDefinition,
    extra: Partial<StepScope>,
    write: (change: Omit<StepWrite, 'runId' | 'stepId'>) => Promise<boolean>,
  ): Promise<StepResult> {
    const { run } = state;
    const signal = state.stop.signal;
    const kind = this.kinds.of(step);
    const scope: StepScope = { ...this.scope(state), ...extra };
    const evaluate = (expression: string, over: StepScope = scope) => this.evaluate(run.organizationId, expression, over, signal);
    const record = state.records.get(step.id);
    const resuming = record?.status === 'waiting';

    let input: unknown = resuming ? record.input : run.input;
    if (!resuming) {
      if (step.if !== undefined) {
        const condition = await evaluate(step.if);
        if ('error' in condition)
          return this.recordFailure(write, { code: condition.error.code, message: `if: ${condition.error.message}` });
        if (!condition.value)
          return (await write({ status: 'skipped', reason: 'its if was false' })) ? { status: 'skipped' } : { status: 'canceled' };
      }
      if (step.input !== undefined) {
        const evaluated = await evaluate(step.input);
        if ('error' in evaluated)
          return this.recordFailure(write, { code: evaluated.error.code, message: `input: ${evaluated.error.message}` });
        input = evaluated.value;
      }
    }

    // The input goes with the step's first write (a resumed step's is on record): later writes carry the
    // same value, so they leave it where it is, and a large input is not copied again at each attempt or wait.
    let inputWritten = resuming;
    const withInput = () => {
      const change = inputWritten ? {} : { input };
      inputWritten = true;
      return change;
    };
    const executionId = kind.keepsExecution ? (record?.executionId ?? timeOrderedId()) : null;
    const context = (attempt: number): StepContext => ({
      run,
      step,
      record: state.records.get(step.id),
      attempt,
      input,
      scope,
      executionId,
      callId: step.id,
      signal,
      pluginConfigs: state.pluginConfigs,
      evaluate,
      memo: <T>(key: string, load: () => Promise<T>) => {
        if (!state.memo.has(key)) state.memo.set(key, load());
        return state.memo.get(key) as Promise<T>;
      },
    });
    const retry = step.retry;
    const maxAttempts = retry?.maxAttempts ?? (await kind.defaultAttempts?.(context(1))) ?? 1;

    for (let attempt = (record?.attempts ?? 0) + 1; ; attempt++) {
      // A step that calls out counts its attempts; a sleep resuming is the same attempt.
      const counted = kind.callsOut || !resuming ? attempt : (record?.attempts ?? 1);
      if (kind.callsOut && !(await write({ status: 'running', attempts: counted, ...withInput(), executionId })))
        return { status: 'canceled' };
      const answer: StepAnswer = await kind.run(context(counted));
      const child = answer.childRunId ? { childRunId: answer.childRunId } : {};
      if (answer.status === 'waiting') {
        if (!answer.resumeAt || kind.answered) state.checked.add(step.id);
        const waitingFor = answer.waitingFor ? { waitingFor: answer.waitingFor } : {};
        return (await write({ status: 'waiting', attempts: counted, ...withInput(), resumeAt: answer.resumeAt, ...child, ...waitingFor }))
          ? { status: 'waiting' }
          : { status: 'canceled' };
      }
      const outcome: Outcome = answer;
      if (outcome.status === 'failed' || outcome.status === 'timed_out') {
        const wait = retryWait(step.retry, outcome, counted, maxAttempts);
        if (wait !== null && !signal.aborted) {
          if (wait === 0) continue;
          return (await write({
            status: 'waiting',
            attempts: counted,
            ...withInput(),
            executionId,
            error: outcome.error,
            resumeAt: new Date(Date.now() + wait),
          }))
            ? { status: 'waiting' }
            : { status: 'canceled' };
        }
      }
      await kind.settle?.(context(counted), outcome);
      // Stopped with the run: the run's end marks the step canceled.
      if (outcome.status === 'canceled' || (signal.aborted && outcome.status !== 'succeeded')) return { status: 'canceled' };
      // A step that calls out recorded its attempt as it began.
      const attempts = kind.callsOut ? {} : { attempts: counted };
      if (outcome.status !== 'succeeded') return this.recordFailure(write, outcome.error, { ...attempts, ...child });
      // Branches not taken are skipped first (again after a crash, the same choice skips only what is left).
      const notTaken = answer.status === 'succeeded' ? (answer.notTaken ?? []).filter((n) => state.status.get(n.id) === 'pending') : [];
      if (notTaken.length && !(await this.skip(state, notTaken))) return { status: 'canceled' };
      return (await write({ status: 'succeeded', ...attempts, ...child, output: outcome.output }))
        ? { status: 'succeeded', output: outcome.output }
        : { status: 'canceled' };
    }
  }

  private async recordFailure(
    write: (change: Omit<StepWrite, 'runId' | 'stepId'>) => Promise<boolean>,
    error: Failure,
    fields: Pick<StepWrite, 'attempts' | 'childRunId'> = {},
  ): Promise<StepResult> {
    return (await write({ status: 'failed', error, ...fields })) ? { status: 'failed', error } : { status: 'canceled' };
  }

  /** What expressions see: the run input, and each finished step's output (or error). */
  private scope(state: RunState): StepScope {
    const steps: StepScope['steps'] = {};
    for (const [id, output] of state.outputs) steps[id] = { output };
    for (const [id, error] of state.errors) steps[id] = { error };
    return { input: state.run.input, steps };
  }

  /** The run's output: its `output` expression, or every step's output by id. */
  private async output(state: RunState): Promise<{ value: unknown } | { error: Failure }> {
    const outputs = Object.fromEntries(state.outputs);
    if (state.plan.definition.output === undefined) return { value: outputs };
    const result = await this.evaluate(
      state.run.organizationId,
      state.plan.definition.output,
      this.scope(state),
      new AbortController().signal,
    );
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
      // JSONata can cut a surrogate pair in two ($substring) or write "\u0000": the value as it can be stored.
      return { value: storable(await this.expressions.evaluate(expression, context, options)) };
    } catch (error) {
      if (error instanceof ExpressionFailure) return { error: { code: error.code, message: error.message } };
      if (signal.aborted) return { error: CANCELED };
      throw error;
    }
  }

  /** Versions never change: each is read and planned once per process. */
  private plan(run: Run): Promise<Plan | null> {
    const key = `${run.workflowId}:${run.workflowVersion}`;
    let cached = this.plans.get(key);
    if (!cached) {
      cached = this.workflows.version(run.workflowId, run.workflowVersion).then((v) => (v ? this.planOf(v.definition) : null));
      cached.catch(() => this.plans.delete(key));
      this.plans.set(key, cached);
    }
    return cached;
  }

  private planOf(definition: WorkflowDefinition): Plan {
    return {
      definition,
      graph: {
        order: definition.steps.map((s) => s.id),
        needs: effectiveNeeds(definition.steps, this.kinds.all),
        continues: new Set(definition.steps.filter((s) => s.onError === 'continue').map((s) => s.id)),
      },
      byId: new Map(recordedSteps(definition).map((s) => [s.id, s])),
    };
  }
}

/** A step write the database refused for a value it holds. */
class UnstorableWrite extends Error {
  constructor(
    readonly write: StepWrite,
    readonly refusal: unknown,
  ) {
    super(`The database refused a write of step '${write.stepId}': ${(refusal as Error).message}`);
  }
}

function unstorableFailure(error: unknown): Failure {
  const cause = error instanceof UnstorableWrite ? error.refusal : error;
  const what = error instanceof UnstorableWrite && error.write.output !== undefined ? 'output' : 'result';
  const e = cause as { message?: unknown; detail?: unknown; driverError?: { detail?: unknown } };
  const detail = e.detail ?? e.driverError?.detail;
  const reason = [e.message, detail].filter((t) => typeof t === 'string').join(': ');
  return {
    code: 'STEP_OUTPUT_UNSTORABLE',
    message: `The step's ${what} cannot be stored (${reason || 'refused by the database'})`,
  };
}

function runTimedOut(run: Run): Failure {
  return { code: 'RUN_TIMEOUT', message: `The run did not finish within ${run.timeoutMs} ms` };
}
