import { ExecutionError, type Capability } from '../domain/plugin';
import { CapabilityRunner, type CapabilityCall } from './capability-runner';
import type { PluginRegistry } from './plugin-registry';
import type { PluginsService } from './plugins.service';

/** A runner over one action, `fake.act`, whose work is what `execute` answers. */
function runnerOf(execute: Capability['execute']): CapabilityRunner {
  const registry = { capability: () => ({ plugin: {}, capability: { execute } }) } as unknown as PluginRegistry;
  return new CapabilityRunner(registry, {} as PluginsService);
}

function callWith(cancel: AbortSignal): CapabilityCall {
  return {
    organizationId: 'org',
    kind: 'actions',
    qualified: 'fake.act',
    pluginConfig: {},
    config: {},
    input: null,
    timeoutMs: 60_000,
    idempotencyKey: 'key',
    cancel,
    context: {},
  };
}

/** The rejections nobody handled, seen by Node once the microtasks of this turn have run. */
async function unhandledDuring(work: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await work();
    // Node reports unhandled rejections after the microtask queue drains, before the next macrotask.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

describe('CapabilityRunner', () => {
  it('answers canceled for a call canceled before it started, and handles the work that rejects after', async () => {
    const cancel = new AbortController();
    cancel.abort();
    let rejectWork!: (error: Error) => void;
    const runner = runnerOf(() => new Promise((_, reject) => (rejectWork = reject)));

    const unhandled = await unhandledDuring(async () => {
      expect(await runner.run(callWith(cancel.signal))).toEqual({
        status: 'canceled',
        error: { code: 'CANCELED', message: expect.any(String) as unknown },
      });
      // The plugin notices the abort only now, as a plugin does (abortError).
      rejectWork(new ExecutionError('CANCELED', 'The execution was canceled'));
    });

    expect(unhandled).toEqual([]);
  });

  it('handles the work that rejects after a cancel that came while it ran', async () => {
    const cancel = new AbortController();
    let rejectWork!: (error: Error) => void;
    const runner = runnerOf(() => new Promise((_, reject) => (rejectWork = reject)));

    const unhandled = await unhandledDuring(async () => {
      const outcome = runner.run(callWith(cancel.signal));
      cancel.abort();
      expect((await outcome).status).toBe('canceled');
      rejectWork(new ExecutionError('CANCELED', 'The execution was canceled'));
    });

    expect(unhandled).toEqual([]);
  });

  it('answers the plugin’s own failure as its outcome', async () => {
    const runner = runnerOf(() => Promise.reject(new ExecutionError('TOOL_ERROR', 'no luck')));
    expect(await runner.run(callWith(new AbortController().signal))).toEqual({
      status: 'failed',
      error: { code: 'TOOL_ERROR', message: 'no luck' },
    });
  });
});
