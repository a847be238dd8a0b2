import { Logger } from '@nestjs/common';
import { RunResult, RunSignals } from '../../../queue/durable-jobs';
import { DomainError } from '../../../shared/errors/domain-error';
import { CapabilityRunner } from '../../plugins/application/capability-runner';
import { PluginRegistry } from '../../plugins/application/plugin-registry';
import { PluginsService } from '../../plugins/application/plugins.service';
import { Installation } from '../../plugins/domain/installation';
import { Capability, ExecuteRequest, ExecutionError, Plugin } from '../../plugins/domain/plugin';
import { StartedAttempt } from '../domain/execution.repository';
import { AgentExecutor } from './agent-executor';
import { AgentRunner } from './agent-runner';
import { AgentTools } from './tools/agent-tools';
import { ExecutionJobs } from './execution-jobs';
import { InMemoryExecutionRepository } from './execution.repository.fake';

const ORG = '00000000-0000-4000-8000-00000000000a';
const AGENT_ID = '00000000-0000-4000-8000-0000000000a1';
const KIND = 'fake.agent';
const AGENT_CONFIG = { mode: 'echo' };
const PLUGIN_CONFIG = { apiKey: 'secret' };

type Script = 'succeed' | 'upstream error' | 'invalid input' | 'crash' | 'hang';

/** The plugin's one agent kind, doing what the spec scripts; `called` settles once it is. */
class ScriptedCapability implements Capability {
  script: Script = 'succeed';
  readonly requests: ExecuteRequest[] = [];
  readonly called: Promise<ExecuteRequest>;
  private markCalled!: (request: ExecuteRequest) => void;

  constructor() {
    this.called = new Promise((resolve) => (this.markCalled = resolve));
  }

  async execute(request: ExecuteRequest): Promise<unknown> {
    this.requests.push(request);
    this.markCalled(request);
    switch (this.script) {
      case 'succeed':
        return { echoed: request.input };
      case 'upstream error':
        throw new ExecutionError('UPSTREAM_ERROR', 'The remote agent answered 503');
      case 'invalid input':
        throw new ExecutionError('INVALID_INPUT', 'input.text is required');
      case 'crash':
        throw new Error('undefined is not a function');
      case 'hang':
        return new Promise((_resolve, reject) =>
          request.signal.addEventListener('abort', () => reject(request.signal.reason as Error), { once: true }),
        );
    }
  }
}

/** The catalog, holding the one fake plugin. */
class FakePluginRegistry implements Pick<PluginRegistry, 'capability'> {
  constructor(private readonly plugin: Plugin) {}

  capability(kind: 'agentKinds' | 'actions', qualified: string) {
    const [slug, name] = qualified.split('.', 2);
    const capability = slug === this.plugin.manifest.slug ? this.plugin[kind][name] : undefined;
    return capability ? { plugin: this.plugin, capability } : undefined;
  }
}

type Lookup = 'installed' | 'not installed' | 'database away';

/** Installations: the fake plugin is installed, is not, or the lookup fails (the database is away). */
class FakePluginsService implements Pick<PluginsService, 'get'> {
  lookup: Lookup = 'installed';
  lookups = 0;

  constructor(private readonly plugin: Plugin) {}

  async get(organizationId: string, slug: string) {
    this.lookups++;
    if (this.lookup === 'database away') throw new Error('Connection terminated unexpectedly');
    if (this.lookup === 'not installed' || slug !== this.plugin.manifest.slug) {
      throw new DomainError('PLUGIN_NOT_FOUND', `Plugin '${slug}' is not installed`);
    }
    const installation = Installation.create({ organizationId, slug, version: '1.0.0', config: PLUGIN_CONFIG, installedBy: 'u1' });
    return { installation, plugin: this.plugin };
  }
}

function setup(limits: { maxAttempts?: number; timeoutMs?: number } = {}) {
  const capability = new ScriptedCapability();
  const plugin: Plugin = {
    manifest: {
      slug: 'fake',
      name: 'Fake',
      version: '1.0.0',
      description: 'A scripted agent kind',
      configSchema: {},
      secretFields: [],
      agentKinds: [{ name: 'agent', description: 'Scripted', configSchema: {} }],
      actions: [],
    },
    agentKinds: { agent: capability },
    actions: {},
  };
  const plugins = new FakePluginsService(plugin);
  const runner = new CapabilityRunner(new FakePluginRegistry(plugin) as unknown as PluginRegistry, plugins as unknown as PluginsService);
  const executions = new InMemoryExecutionRepository();
  executions.agents.set(AGENT_ID, {
    kind: KIND,
    config: AGENT_CONFIG,
    timeoutMs: limits.timeoutMs ?? 10_000,
    maxAttempts: limits.maxAttempts ?? 3,
  });
  const jobs = { work: jest.fn<void, [(started: StartedAttempt, signals: RunSignals) => Promise<RunResult>]>() };
  // Kinds without tools: the runner calls the plugin as it is.
  const agents = new AgentRunner(runner, { usesTools: () => false } as unknown as AgentTools);
  const executor = new AgentExecutor(jobs as unknown as ExecutionJobs, executions, agents, runner);

  const cancel = new AbortController();
  const lease = new AbortController();
  const signals: RunSignals = { cancel: cancel.signal, lease: lease.signal };

  /** A queued execution started as its `attempt`th attempt, as the core starts it. */
  async function started(attempt = 1): Promise<StartedAttempt> {
    const id = crypto.randomUUID();
    const jobId = crypto.randomUUID();
    await executions.insert({
      id,
      organizationId: ORG,
      agentId: AGENT_ID,
      status: 'queued',
      input: { text: 'hello' },
      output: null,
      error: null,
      attempts: attempt - 1,
      jobId,
      triggeredBy: { type: 'user', id: 'u1' },
      retryOf: null,
      retriedBy: null,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
    });
    const [one] = await executions.start([{ id, jobId }]);
    expect(one.execution.attempts).toBe(attempt);
    return one;
  }

  return { executor, jobs, executions, capability, plugins, cancel, lease, signals, started };
}

describe('AgentExecutor', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('hands the core a run that attempts the started execution', async () => {
    const { executor, jobs, signals, started } = setup();
    executor.onModuleInit();

    expect(jobs.work).toHaveBeenCalledTimes(1);
    const [run] = jobs.work.mock.calls[0];
    await expect(run(await started(), signals)).resolves.toEqual({ status: 'succeeded', output: { echoed: { text: 'hello' } } });
  });

  it('answers the succeeded outcome, calling the plugin with the installation, the agent and the execution as key', async () => {
    const { executor, capability, signals, started } = setup({ timeoutMs: 5000 });
    const attempt = await started();

    await expect(executor.attempt(attempt, signals)).resolves.toEqual({ status: 'succeeded', output: { echoed: { text: 'hello' } } });
    expect(capability.requests).toHaveLength(1);
    expect(capability.requests[0]).toMatchObject({
      pluginConfig: PLUGIN_CONFIG,
      config: AGENT_CONFIG,
      input: { text: 'hello' },
      timeoutMs: 5000,
      idempotencyKey: attempt.execution.id,
    });
  });

  it('answers later, after a backoff that doubles from 1 s, with the error, when a retryable failure has attempts left', async () => {
    const { executor, executions, capability, signals, started } = setup({ maxAttempts: 3 });
    capability.script = 'upstream error';
    const attempt = await started(2);
    const before = Date.now();

    const result = await executor.attempt(attempt, signals);

    const error = { code: 'UPSTREAM_ERROR', message: 'The remote agent answered 503' };
    expect(result).toEqual({ later: { at: expect.any(Date), error } });
    const wait = (result as { later: { at: Date } }).later.at.getTime() - before;
    expect(wait).toBeGreaterThanOrEqual(2000);
    expect(wait).toBeLessThan(3000);
    // The core parks it (a guarded change in its transaction): the executor records nothing itself.
    expect((await executions.findById(attempt.execution.id))?.status).toBe('running');
  });

  it('answers the failed outcome when a retryable failure is on the last attempt', async () => {
    const { executor, capability, signals, started } = setup({ maxAttempts: 3 });
    capability.script = 'upstream error';

    await expect(executor.attempt(await started(3), signals)).resolves.toEqual({
      status: 'failed',
      error: { code: 'UPSTREAM_ERROR', message: 'The remote agent answered 503' },
    });
  });

  it('answers the failed outcome at once for a failure that is not retryable', async () => {
    const { executor, capability, signals, started } = setup({ maxAttempts: 3 });
    capability.script = 'invalid input';

    await expect(executor.attempt(await started(1), signals)).resolves.toEqual({
      status: 'failed',
      error: { code: 'INVALID_INPUT', message: 'input.text is required' },
    });
  });

  it('takes a plugin that throws a plain error for crashed: retried while attempts last, then failed', async () => {
    const { executor, capability, signals, started } = setup({ maxAttempts: 2 });
    capability.script = 'crash';
    const crashed = { code: 'AGENT_CRASHED', message: `${KIND} failed unexpectedly` };

    await expect(executor.attempt(await started(1), signals)).resolves.toEqual({ later: { at: expect.any(Date), error: crashed } });
    await expect(executor.attempt(await started(2), signals)).resolves.toEqual({ status: 'failed', error: crashed });
  });

  it('answers timed_out with AGENT_TIMEOUT when the plugin outlives the timeout on the last attempt, aborting its signal', async () => {
    const { executor, capability, signals, started } = setup({ maxAttempts: 1, timeoutMs: 20 });
    capability.script = 'hang';

    await expect(executor.attempt(await started(1), signals)).resolves.toEqual({
      status: 'timed_out',
      error: { code: 'AGENT_TIMEOUT', message: 'Did not finish within 20 ms' },
    });
    expect(capability.requests[0].signal.aborted).toBe(true);
  });

  it('retries a timeout while attempts last', async () => {
    const { executor, capability, signals, started } = setup({ maxAttempts: 2, timeoutMs: 20 });
    capability.script = 'hang';
    const attempt = await started(1);

    await expect(executor.attempt(attempt, signals)).resolves.toEqual({
      later: { at: expect.any(Date), error: { code: 'AGENT_TIMEOUT', message: 'Did not finish within 20 ms' } },
    });
  });

  it('answers null on a cancel (the API recorded it), aborting the plugin', async () => {
    const { executor, capability, cancel, signals, started } = setup({ timeoutMs: 60_000 });
    capability.script = 'hang';

    const result = executor.attempt(await started(1), signals);
    const request = await capability.called;
    cancel.abort();

    await expect(result).resolves.toBeNull();
    expect(request.signal.aborted).toBe(true);
  });

  it('records nothing when the lease is lost, even on the last attempt, aborting the plugin (the job runs again)', async () => {
    const { executor, capability, lease, signals, started } = setup({ maxAttempts: 1, timeoutMs: 60_000 });
    capability.script = 'hang';

    const result = executor.attempt(await started(1), signals);
    const request = await capability.called;
    lease.abort();

    await expect(result).resolves.toBeNull();
    expect(request.signal.aborted).toBe(true);
  });

  it('answers failed PLUGIN_NOT_FOUND without calling the plugin when it is not installed', async () => {
    const { executor, capability, plugins, signals, started } = setup();
    plugins.lookup = 'not installed';

    await expect(executor.attempt(await started(1), signals)).resolves.toEqual({
      status: 'failed',
      error: { code: 'PLUGIN_NOT_FOUND', message: "Plugin 'fake' is not installed" },
    });
    expect(capability.requests).toEqual([]);
  });

  it('rejects when the plugin lookup fails otherwise (transient errors are transient), and looks up again next time', async () => {
    const { executor, executions, capability, plugins, signals, started } = setup();
    plugins.lookup = 'database away';
    const attempt = await started(1);

    await expect(executor.attempt(attempt, signals)).rejects.toThrow('Connection terminated unexpectedly');
    expect(capability.requests).toEqual([]);
    expect((await executions.findById(attempt.execution.id))?.status).toBe('running');

    // The queue runs the job again: the failed lookup was not kept.
    plugins.lookup = 'installed';
    await expect(executor.attempt(attempt, signals)).resolves.toMatchObject({ status: 'succeeded' });
    expect(plugins.lookups).toBe(2);
  });
});
