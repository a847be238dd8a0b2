import { randomUUID } from 'node:crypto';
import { OrganizationShares } from '../../../shared/fairness/organization-shares';
import { AppConfig } from '../../../config/app-config';
import { RunResult } from '../../../queue/durable-jobs';
import { ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { AgentSteps } from '../../agents/application/agent-steps';
import { CapabilityRunner } from '../../plugins/application/capability-runner';
import { PluginRegistry } from '../../plugins/application/plugin-registry';
import { pluginNotFound, PluginsService } from '../../plugins/application/plugins.service';
import { Capability, ExecuteRequest, ExecutionError, ExecutionErrorCode } from '../../plugins/domain/plugin';
import { recordedSteps, WorkflowDefinition } from '../../workflows/domain/definition';
import { pendingStep, Run, StepRun } from '../domain/run';
import { Workflow } from '../../workflows/domain/workflow';
import { InMemoryRunRepository } from '../domain/run.repository.fake';
import { InMemoryWorkflowRepository } from '../../workflows/domain/workflow.repository.fake';
import { RunEngine } from './run-engine';
import { RunJobs } from './run-jobs';
import { ActionStep } from './steps/action.step';
import { AgentStep } from './steps/agent.step';
import { MapStep } from './steps/map.step';
import { WorkflowStep } from './steps/workflow.step';
import { WaitStep } from './steps/wait.step';
import { SleepStep } from './steps/sleep.step';
import { StepKinds } from './steps/step-kinds';
import { StepRules } from '../../workflows/application/step-rules';
import { SwitchStep } from './steps/switch.step';

const ORG = 'org-1';

/** What one attempt of a step does. */
type Behaviour = (request: ExecuteRequest) => unknown;

const stepOf = (request: ExecuteRequest) => request.idempotencyKey.split(':')[1];
/** The default: succeeds with the step's id and its input. */
const echo: Behaviour = (request) => ({ step: stepOf(request), input: request.input });
const fail =
  (code: ExecutionErrorCode): Behaviour =>
  () => {
    throw new ExecutionError(code, `the fake answered ${code}`);
  };
/** Never answers; rejects once its signal aborts, as a well-behaved plugin does. */
const hang: Behaviour = (request) =>
  new Promise((_resolve, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason as Error)));

/** The action `test.step`: what each attempt of each step does is scripted by the test. */
class ScriptedCapability implements Capability {
  readonly calls: Array<{ stepId: string; input: unknown; config: Record<string, unknown>; signal: AbortSignal }> = [];
  private readonly scripts = new Map<string, Behaviour[]>();
  private readonly waiting = new Map<string, () => void>();

  /** One behaviour per attempt; the last one repeats. */
  script(stepId: string, ...behaviours: Behaviour[]): void {
    this.scripts.set(stepId, behaviours);
  }

  /** Resolves once the step's first attempt has called the capability. */
  called(stepId: string): Promise<void> {
    if (this.calls.some((c) => c.stepId === stepId)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(stepId, resolve));
  }

  callsOf(stepId: string) {
    return this.calls.filter((c) => c.stepId === stepId);
  }

  async execute(request: ExecuteRequest): Promise<unknown> {
    const stepId = stepOf(request);
    this.calls.push({ stepId, input: request.input, config: request.config, signal: request.signal });
    this.waiting.get(stepId)?.();
    const script = this.scripts.get(stepId) ?? [];
    const behaviour = script.length > 1 ? script.shift()! : (script[0] ?? echo);
    return behaviour(request);
  }
}

describe('RunEngine', () => {
  let expressions: ExpressionSandbox;
  let runs: InMemoryRunRepository;
  let workflows: InMemoryWorkflowRepository;
  let capability: ScriptedCapability;
  /** Installation config lookups by plugin slug: `test` is installed, `missing` is not, `flaky`'s database is away. */
  let configLookups: string[];
  let engine: RunEngine;

  beforeAll(() => {
    expressions = new ExpressionSandbox(
      { expressions: { threads: 1, heapMb: 64, timeLimitMs: 1000, inline: true }, shareOverrides: {} } as unknown as AppConfig,
      new OrganizationShares({ shareOverrides: {} } as unknown as AppConfig),
    );
  });
  afterAll(() => expressions.onModuleDestroy());

  beforeEach(() => {
    runs = new InMemoryRunRepository();
    workflows = new InMemoryWorkflowRepository();
    capability = new ScriptedCapability();
    configLookups = [];
    const plugin = { manifest: { slug: 'test' }, agentKinds: {}, actions: { step: capability } };
    const registry = {
      capability: (kind: string, qualified: string) =>
        kind === 'actions' && qualified === 'test.step' ? { plugin, capability } : undefined,
    } as unknown as PluginRegistry;
    const plugins = {
      get: async (organizationId: string, slug: string) => {
        configLookups.push(`${organizationId}:${slug}`);
        if (slug === 'test') return { installation: { config: { token: 'secret' } }, plugin };
        if (slug === 'flaky') throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        throw pluginNotFound(slug);
      },
    } as unknown as PluginsService;
    // RunJobs is used by onModuleInit and to signal step writes to live streams, AgentSteps only by agent steps: these runs have neither.
    const runner = new CapabilityRunner(registry, plugins);
    const kinds = new StepKinds(
      new AgentStep({} as AgentSteps),
      new ActionStep(runner),
      new SleepStep(),
      new SwitchStep(),
      new MapStep(runs),
      new WorkflowStep(runs, null as never),
      new WaitStep(null as never),
      new StepRules(),
    );
    engine = new RunEngine({ changed: () => undefined } as unknown as RunJobs, runs, workflows, kinds, runner, expressions);
  });

  /** A run a worker just started, of a new workflow with this definition. */
  function startedRun(
    definition: WorkflowDefinition,
    changes: { timeoutMs?: number; startedAt?: Date; steps?: Array<Partial<StepRun>> } = {},
  ): Run {
    const now = new Date();
    const workflow = workflows.add(
      Workflow.rehydrate({
        id: randomUUID(),
        organizationId: ORG,
        definition,
        version: 3,
        createdBy: 'user-1',
        createdAt: now,
        updatedAt: now,
      }),
    );
    return {
      id: randomUUID(),
      organizationId: ORG,
      workflowId: workflow.id,
      workflowVersion: workflow.version,
      status: 'running',
      input: { n: 1, go: false },
      output: null,
      error: null,
      attempts: 1,
      timeoutMs: changes.timeoutMs ?? 60_000,
      jobId: randomUUID(),
      triggeredBy: { type: 'user', id: 'user-1' },
      parentRunId: null,
      depth: 0,
      retryOf: null,
      retriedBy: null,
      concurrency: null,
      createdAt: now,
      startedAt: changes.startedAt ?? now,
      finishedAt: null,
      steps: recordedSteps(definition).map((s) => ({ ...pendingStep(s.id), ...changes.steps?.find((c) => c.id === s.id) })),
    };
  }

  function signals() {
    return { cancel: new AbortController(), lease: new AbortController() };
  }

  function execute(run: Run, controllers = signals()): Promise<RunResult> {
    return engine.execute(run, { cancel: controllers.cancel.signal, lease: controllers.lease.signal });
  }

  /** The run as a new worker reads it: its steps with every write applied (as the SQL applies them). */
  function committed(run: Run): Run {
    const steps = run.steps.map((step) => {
      let s = { ...step };
      for (const w of runs.stepWrites(step.id).filter((w) => w.runId === run.id)) {
        s = {
          ...s,
          status: w.status,
          attempts: w.attempts ?? s.attempts,
          input: w.input !== undefined ? w.input : s.input,
          output: w.status === 'succeeded' ? w.output : null,
          error: w.error ?? null,
          executionId: w.executionId ?? s.executionId,
          resumeAt: w.resumeAt ?? null,
          reason: w.reason ?? null,
        };
      }
      return s;
    });
    return { ...run, steps };
  }

  /** Runs it, and resumes it with what it committed each time it answers `later` (after its time), until it ends. */
  async function executeThroughWaits(run: Run, clock?: { to(ms: number): void }): Promise<{ result: RunResult; waits: Date[] }> {
    const waits: Date[] = [];
    for (;;) {
      const result = await execute(committed(run));
      if (!result || typeof result !== 'object' || !('later' in result)) return { result, waits };
      waits.push(result.later.at);
      if (clock) {
        clock.to(result.later.at.getTime());
        continue;
      }
      // A timer may fire a millisecond before the clock reaches its due time: wait until the clock has.
      while (Date.now() < result.later.at.getTime())
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, result.later.at.getTime() - Date.now())));
    }
  }

  /** A step's writes as status and attempt count, in order. */
  function statuses(stepId: string): string[] {
    return runs.stepWrites(stepId).map((w) => (w.attempts === undefined ? w.status : `${w.status}#${w.attempts}`));
  }

  function failure(result: RunResult): Failure {
    expect(result).toMatchObject({ status: expect.stringMatching(/^(failed|timed_out)$/) });
    return (result as Exclude<Outcome, { status: 'succeeded' }>).error;
  }

  it('runs a linear graph in order, passing outputs on, and answers every output by step id', async () => {
    const run = startedRun({
      name: 'linear',
      steps: [
        { id: 'a', action: 'test.step', with: { mode: 'first' } },
        { id: 'b', action: 'test.step', needs: ['a'], input: '{ "from": steps.a.output.step, "n": input.n + 1 }' },
        { id: 'c', action: 'test.step', needs: ['b'], input: 'steps.b.output.input' },
      ],
    });

    const result = await execute(run);

    expect(result).toEqual({
      status: 'succeeded',
      output: {
        a: { step: 'a', input: { n: 1, go: false } },
        b: { step: 'b', input: { from: 'a', n: 2 } },
        c: { step: 'c', input: { from: 'a', n: 2 } },
      },
    });
    expect(capability.calls.map((c) => c.stepId)).toEqual(['a', 'b', 'c']);
    expect(capability.callsOf('a')[0].config).toEqual({ mode: 'first' });
    for (const id of ['a', 'b', 'c']) expect(statuses(id)).toEqual(['running#1', 'succeeded']);
    expect(runs.stepWrites('b')[0]).toMatchObject({ runId: run.id, input: { from: 'a', n: 2 }, executionId: null });
    expect(runs.stepWrites('c')[1]).toMatchObject({ output: { step: 'c', input: { from: 'a', n: 2 } } });
    // The installation config is looked up once for the whole run.
    expect(configLookups).toEqual([`${ORG}:test`]);
  });

  it("answers the definition's output expression when it has one", async () => {
    const run = startedRun({
      name: 'with output',
      steps: [
        { id: 'a', action: 'test.step' },
        { id: 'b', action: 'test.step', needs: ['a'] },
      ],
      output: '{ "steps": [steps.a.output.step, steps.b.output.step], "n": input.n }',
    });

    await expect(execute(run)).resolves.toEqual({ status: 'succeeded', output: { steps: ['a', 'b'], n: 1 } });
  });

  it('skips a step whose if is false, and the steps that need it, and still succeeds', async () => {
    const run = startedRun({
      name: 'conditional',
      steps: [
        { id: 'a', action: 'test.step' },
        { id: 'gated', action: 'test.step', needs: ['a'], if: 'input.go' },
        { id: 'after', action: 'test.step', needs: ['gated'] },
        { id: 'other', action: 'test.step', needs: ['a'], if: 'input.n = 1' },
      ],
    });

    const result = await execute(run);

    expect(result).toEqual({
      status: 'succeeded',
      output: { a: { step: 'a', input: run.input }, other: { step: 'other', input: run.input } },
    });
    expect(statuses('gated')).toEqual(['skipped']);
    expect(statuses('after')).toEqual(['skipped']);
    expect(statuses('other')).toEqual(['running#1', 'succeeded']);
    expect(capability.calls.map((c) => c.stepId).sort()).toEqual(['a', 'other']);
  });

  it('fails the run with STEP_FAILED naming the step, aborts the running sibling and runs no dependent', async () => {
    capability.script('broken', fail('INVALID_INPUT'));
    capability.script('slow', hang);
    const run = startedRun({
      name: 'failing',
      steps: [
        { id: 'slow', action: 'test.step' },
        { id: 'broken', action: 'test.step', retry: { maxAttempts: 3, backoffMs: 1 } },
        { id: 'dependent', action: 'test.step', needs: ['broken'] },
      ],
    });

    const result = await execute(run);

    expect(failure(result)).toEqual({
      code: 'STEP_FAILED',
      message: "Step 'broken' failed: INVALID_INPUT: the fake answered INVALID_INPUT",
    });
    expect((result as Outcome).status).toBe('failed');
    // Not retryable: one attempt only, recorded as failed with its own error.
    expect(statuses('broken')).toEqual(['running#1', 'failed']);
    expect(runs.stepWrites('broken')[1].error).toEqual({ code: 'INVALID_INPUT', message: 'the fake answered INVALID_INPUT' });
    expect(capability.callsOf('broken')).toHaveLength(1);
    // The sibling was aborted and is left `running` for the run's finish to mark canceled; the
    // dependent was never started and is left `pending` for the finish to mark skipped.
    expect(capability.callsOf('slow')[0].signal.aborted).toBe(true);
    expect(statuses('slow')).toEqual(['running#1']);
    expect(statuses('dependent')).toEqual([]);
    expect(capability.callsOf('dependent')).toHaveLength(0);
  });

  it('retries a retryable failure with backoff and records every attempt', async () => {
    capability.script('a', fail('UPSTREAM_ERROR'), fail('UPSTREAM_ERROR'), () => ({ ok: true }));
    const run = startedRun({ name: 'retry', steps: [{ id: 'a', action: 'test.step', retry: { maxAttempts: 3, backoffMs: 20 } }] });
    // A controlled clock: it stands still while the engine runs (a loaded machine must not let a
    // 20 ms backoff pass before the engine looks), and moves to each wait's end between executions.
    let now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);

    const { result, waits } = await executeThroughWaits(run, { to: (ms) => (now = ms) }).finally(() => clock.mockRestore());

    expect(result).toEqual({ status: 'succeeded', output: { a: { ok: true } } });
    // Between attempts the step waits (exponential: 20, then 40 ms) and the run lets go of its worker.
    expect(statuses('a')).toEqual(['running#1', 'waiting#1', 'running#2', 'waiting#2', 'running#3', 'succeeded']);
    expect(runs.stepWrites('a')[1]).toMatchObject({ error: { code: 'UPSTREAM_ERROR' }, resumeAt: waits[0] });
    expect(waits).toHaveLength(2);
    expect(capability.callsOf('a')).toHaveLength(3);
    // The input is written once, with the first attempt; the writes after it leave it where it is (a large one is not
    // copied again), and every attempt, resumed from the record, gets it.
    expect(runs.stepWrites('a').map((w) => w.input)).toEqual([{ n: 1, go: false }, undefined, undefined, undefined, undefined, undefined]);
    expect(capability.callsOf('a').map((c) => c.input)).toEqual([1, 2, 3].map(() => ({ n: 1, go: false })));
  });

  it('fails the step with its last error once the attempts are used up', async () => {
    capability.script('a', fail('UPSTREAM_ERROR'));
    const run = startedRun({ name: 'retry', steps: [{ id: 'a', action: 'test.step', retry: { maxAttempts: 2, backoffMs: 0 } }] });

    const result = await execute(run);

    expect(failure(result)).toMatchObject({ code: 'STEP_FAILED', message: expect.stringContaining("Step 'a' failed: UPSTREAM_ERROR") });
    // No backoff: the next attempt follows at once, in the same worker.
    expect(statuses('a')).toEqual(['running#1', 'running#2', 'failed']);
  });

  it('sleeps without holding the worker: the run answers later at the due time, and goes on from there once resumed', async () => {
    const run = startedRun({
      name: 'nap',
      steps: [
        { id: 'a', action: 'test.step' },
        { id: 'nap', sleep: { seconds: 1 }, needs: ['a'] },
        { id: 'b', action: 'test.step', needs: ['nap'] },
      ],
    });
    const began = Date.now();

    const first = await execute(run);
    expect(first).toEqual({ later: { at: expect.any(Date), error: null } });
    const due = (first as { later: { at: Date } }).later.at.getTime();
    expect(due - began).toBeGreaterThanOrEqual(1000);
    expect(due - began).toBeLessThan(2000);
    expect(statuses('nap')).toEqual(['waiting#1']);
    expect(capability.callsOf('b')).toHaveLength(0);

    // Resumed before its time (a wake-up too early) it waits again, for the same time: the wait does not start over.
    expect(await execute(committed(run))).toEqual({ later: { at: new Date(due), error: null } });

    const { result } = await executeThroughWaits(run);
    expect(result).toMatchObject({ status: 'succeeded', output: { nap: { until: new Date(due).toISOString() } } });
    expect(capability.callsOf('a')).toHaveLength(1);
    expect(capability.callsOf('b')).toHaveLength(1);
  });

  it('takes the first switch case that holds, skips the other branches with the reason, and runs a join of both', async () => {
    const run = startedRun({
      name: 'route',
      steps: [
        {
          id: 'route',
          switch: {
            cases: [
              { when: 'input.go', steps: ['fast'] },
              { when: 'true', steps: ['slow'] },
            ],
            default: ['never'],
          },
        },
        { id: 'fast', action: 'test.step' },
        { id: 'slow', action: 'test.step' },
        { id: 'never', action: 'test.step' },
        { id: 'after-slow', action: 'test.step', needs: ['slow'] },
        { id: 'after-fast', action: 'test.step', needs: ['fast'] },
        { id: 'join', action: 'test.step', needs: ['fast', 'slow'] },
      ],
    });

    const result = await execute(run);

    expect(result).toMatchObject({ status: 'succeeded', output: { route: { case: 1, steps: ['slow'] } } });
    expect(capability.calls.map((c) => c.stepId).sort()).toEqual(['after-slow', 'join', 'slow']);
    expect(runs.stepWrites('after-fast')).toEqual([
      expect.objectContaining({ status: 'skipped', reason: 'not taken: it needs only steps not taken' }),
    ]);
    expect(runs.stepWrites('fast')).toEqual([
      expect.objectContaining({ status: 'skipped', reason: "not taken: switch 'route' took case 1" }),
    ]);
    expect(runs.stepWrites('never')).toEqual([
      expect.objectContaining({ status: 'skipped', reason: "not taken: switch 'route' took case 1" }),
    ]);
    expect(runs.stepWrites('after-slow').map((w) => w.status)).toEqual(['running', 'succeeded']);
  });

  it('goes on past a step that fails with onError continue; later steps read its error and the run succeeds', async () => {
    capability.script('bad', fail('INVALID_INPUT'));
    const run = startedRun({
      name: 'continue',
      steps: [
        { id: 'bad', action: 'test.step', onError: 'continue' },
        { id: 'next', action: 'test.step', needs: ['bad'], input: 'steps.bad.error.code' },
      ],
    });

    const result = await execute(run);

    expect(result).toMatchObject({ status: 'succeeded' });
    expect(statuses('bad')).toEqual(['running#1', 'failed']);
    expect(capability.callsOf('next')[0].input).toBe('INVALID_INPUT');
  });

  it('runs onFailure once when the run fails, with the error in its context', async () => {
    capability.script('bad', fail('INVALID_INPUT'));
    const run = startedRun({
      name: 'on failure',
      steps: [{ id: 'bad', action: 'test.step' }],
      onFailure: { id: 'notify', action: 'test.step', input: 'error.code' },
    });

    const result = await execute(run);

    expect(failure(result).code).toBe('STEP_FAILED');
    expect(capability.callsOf('notify').map((c) => c.input)).toEqual(['STEP_FAILED']);
    expect(statuses('notify')).toEqual(['running#1', 'succeeded']);
    // A new worker taking the failed run up (its worker died before finishing it) does not run onFailure again.
    const again = await execute(committed(run));
    expect(failure(again).code).toBe('STEP_FAILED');
    expect(capability.callsOf('notify')).toHaveLength(1);
    expect(capability.callsOf('bad')).toHaveLength(1);
  });

  it('does not retry a non-retryable failure', async () => {
    capability.script('a', fail('INVALID_OUTPUT'), () => ({ ok: true }));
    const run = startedRun({ name: 'no retry', steps: [{ id: 'a', action: 'test.step', retry: { maxAttempts: 3, backoffMs: 1 } }] });

    const result = await execute(run);

    expect(failure(result).code).toBe('STEP_FAILED');
    expect(statuses('a')).toEqual(['running#1', 'failed']);
    expect(capability.callsOf('a')).toHaveLength(1);
  });

  it('aborts a hanging step on cancel and answers null, recording nothing more', async () => {
    capability.script('a', hang);
    const run = startedRun({
      name: 'canceled',
      steps: [
        { id: 'a', action: 'test.step' },
        { id: 'b', action: 'test.step', needs: ['a'] },
      ],
    });
    const controllers = signals();

    const answer = execute(run, controllers);
    await capability.called('a');
    // As the API does: the cancel is recorded (later step writes no longer apply), then announced.
    runs.canceledRuns.add(run.id);
    controllers.cancel.abort();

    await expect(answer).resolves.toBeNull();
    expect(capability.callsOf('a')[0].signal.aborted).toBe(true);
    expect(statuses('a')).toEqual(['running#1']);
    expect(statuses('b')).toEqual([]);
  });

  it('answers timed_out with RUN_TIMEOUT when the run outlives its bound', async () => {
    capability.script('a', hang);
    const timeoutMs = 1000;
    const run = startedRun(
      { name: 'slow', steps: [{ id: 'a', action: 'test.step' }] },
      { timeoutMs, startedAt: new Date(Date.now() - timeoutMs + 50) },
    );

    const result = await execute(run);

    expect(result).toEqual({
      status: 'timed_out',
      error: { code: 'RUN_TIMEOUT', message: 'The run did not finish within 1000 ms' },
    });
    expect(capability.callsOf('a')[0].signal.aborted).toBe(true);
    expect(statuses('a')).toEqual(['running#1']);
  });

  it('answers timed_out at once for a run already past its bound', async () => {
    const run = startedRun(
      { name: 'late', steps: [{ id: 'a', action: 'test.step' }] },
      { timeoutMs: 1000, startedAt: new Date(Date.now() - 2000) },
    );

    await expect(execute(run)).resolves.toMatchObject({ status: 'timed_out', error: { code: 'RUN_TIMEOUT' } });
    expect(capability.calls).toHaveLength(0);
    expect(runs.writes).toHaveLength(0);
  });

  it('resumes a run: a succeeded step is not run again, one that was in flight runs again', async () => {
    const run = startedRun(
      {
        name: 'resumed',
        steps: [
          { id: 'done', action: 'test.step' },
          { id: 'interrupted', action: 'test.step', needs: ['done'], input: 'steps.done.output' },
        ],
      },
      {
        steps: [
          { id: 'done', status: 'succeeded', attempts: 1, output: { kept: true } },
          { id: 'interrupted', status: 'running', attempts: 2 },
        ],
      },
    );

    const result = await execute(run);

    expect(result).toEqual({
      status: 'succeeded',
      output: { done: { kept: true }, interrupted: { step: 'interrupted', input: { kept: true } } },
    });
    expect(capability.callsOf('done')).toHaveLength(0);
    expect(statuses('done')).toEqual([]);
    // Its attempts count on from those already recorded.
    expect(statuses('interrupted')).toEqual(['running#3', 'succeeded']);
  });

  it('rejects, rather than answering an outcome, when a step write fails (the database went away)', async () => {
    capability.script('slow', hang);
    runs.failWrite = (w) => w.stepId === 'a' && w.status === 'succeeded';
    const run = startedRun({
      name: 'database away',
      steps: [
        { id: 'a', action: 'test.step' },
        { id: 'slow', action: 'test.step' },
      ],
    });

    await expect(execute(run)).rejects.toThrow('Connection terminated unexpectedly');
    // The other step was stopped before the run's job gave up on this attempt.
    expect(capability.callsOf('slow')[0].signal.aborted).toBe(true);
  });

  it('fails a step whose output the database refuses at once (STEP_OUTPUT_UNSTORABLE), and commits the writes beside it', async () => {
    runs.refuseWrite = (w) => w.stepId === 'a' && w.status === 'succeeded';
    const run = startedRun({
      name: 'unstorable output',
      steps: [
        { id: 'a', action: 'test.step', retry: { maxAttempts: 3, backoffMs: 1 } },
        { id: 'b', action: 'test.step' },
      ],
    });

    const result = await execute(run);

    // An outcome, not a rejection: a rejection is a lost worker, and the run's job would run the step again.
    expect(failure(result)).toEqual({
      code: 'STEP_FAILED',
      message:
        "Step 'a' failed: STEP_OUTPUT_UNSTORABLE: The step's output cannot be stored (unsupported Unicode escape sequence: \\u0000 cannot be converted to text.)",
    });
    expect(statuses('a')).toEqual(['running#1', 'failed']);
    expect(runs.stepWrites('a')[1].error).toMatchObject({ code: 'STEP_OUTPUT_UNSTORABLE' });
    expect(capability.callsOf('a')).toHaveLength(1);
    // Written in the same statement as a's refused one at first, b's result was written again alone.
    expect(statuses('b')).toEqual(['running#1', 'succeeded']);
  });

  it('hands on what an expression makes as it can be stored: lone surrogates U+FFFD, NULs removed', async () => {
    const run = startedRun({ name: 'expression text', steps: [{ id: 'a', action: 'test.step', input: '{ "t": "x\\u0000y\\ud800" }' }] });

    const result = await execute(run);

    expect(result).toMatchObject({ status: 'succeeded' });
    expect(capability.callsOf('a')[0].input).toEqual({ t: 'xy\uFFFD' });
  });

  it('rejects when writing skipped steps fails, after stopping the steps still running', async () => {
    capability.script('slow', hang);
    runs.failWrite = (w) => w.stepId === 'after' && w.status === 'skipped';
    const run = startedRun({
      name: 'database away while skipping',
      steps: [
        { id: 'slow', action: 'test.step' },
        { id: 'gated', action: 'test.step', if: 'input.go' },
        { id: 'after', action: 'test.step', needs: ['gated'] },
      ],
    });

    await expect(execute(run)).rejects.toThrow('Connection terminated unexpectedly');
    expect(capability.callsOf('slow')[0].signal.aborted).toBe(true);
  });

  it('rejects when the plugin config lookup fails for another reason than the plugin not being installed', async () => {
    const run = startedRun({ name: 'flaky', steps: [{ id: 'a', action: 'flaky.step' }] });

    await expect(execute(run)).rejects.toThrow('ECONNREFUSED');
    expect(statuses('a')).toEqual(['running#1']);
  });

  it('fails the step with PLUGIN_NOT_FOUND when its plugin is not installed', async () => {
    const run = startedRun({ name: 'uninstalled', steps: [{ id: 'a', action: 'missing.step', retry: { maxAttempts: 3, backoffMs: 1 } }] });

    const result = await execute(run);

    expect(failure(result)).toEqual({
      code: 'STEP_FAILED',
      message: "Step 'a' failed: PLUGIN_NOT_FOUND: Plugin 'missing' is not installed",
    });
    expect(statuses('a')).toEqual(['running#1', 'failed']);
    expect(runs.stepWrites('a')[1].error).toMatchObject({ code: 'PLUGIN_NOT_FOUND' });
    expect(capability.calls).toHaveLength(0);
  });
});
