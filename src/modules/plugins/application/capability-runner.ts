import { Injectable, Logger } from '@nestjs/common';
import { ExecutionError, PluginLogger } from '../domain/plugin';
import { PluginRegistry } from './plugin-registry';
import { PluginsService } from './plugins.service';

export interface CallFailure {
  code: string;
  message: string;
}

/** How one call of an agent kind or action ended. */
export type CallOutcome = { status: 'succeeded'; output: unknown } | { status: 'failed' | 'timed_out' | 'canceled'; error: CallFailure };

export interface CapabilityCall {
  kind: 'agentKinds' | 'actions';
  /** `<plugin>.<name>`. */
  qualified: string;
  /** The installation's config; look it up with `pluginConfig` (null: not installed). */
  pluginConfig: Record<string, unknown> | null;
  config: Record<string, unknown>;
  input: unknown;
  timeoutMs: number;
  idempotencyKey: string;
  /** Aborts the call as `canceled`. */
  cancel: AbortSignal;
  /** Aborts the call as lost (the job's lease ran out). */
  lease?: AbortSignal;
  /** Added to every log line the plugin writes. */
  context: Record<string, unknown>;
}

/** Failures worth another attempt: the remote side may answer next time. */
const RETRYABLE = new Set(['UPSTREAM_ERROR', 'AGENT_TIMEOUT', 'AGENT_CRASHED']);

export function isRetryable(outcome: CallOutcome): boolean {
  return outcome.status !== 'succeeded' && outcome.status !== 'canceled' && RETRYABLE.has(outcome.error.code);
}

/**
 * Calls a plugin's agent kind or action once, bounded by its timeout and aborted on cancel
 * or a lost lease, and turns whatever happens into an outcome: agent executions and
 * workflow steps share it, so a failure reads the same wherever it happened.
 */
@Injectable()
export class CapabilityRunner {
  private readonly logger = new Logger('Plugins');

  constructor(
    private readonly registry: PluginRegistry,
    private readonly plugins: PluginsService,
  ) {}

  /** The installation's config (secrets decrypted), or null when the plugin is not installed. */
  pluginConfig(organizationId: string, slug: string): Promise<Record<string, unknown> | null> {
    return this.plugins.get(organizationId, slug).then(
      ({ installation }) => installation.config,
      () => null,
    );
  }

  async run(call: CapabilityCall): Promise<CallOutcome> {
    const found = this.registry.capability(call.kind, call.qualified);
    if (!call.pluginConfig) return failed('PLUGIN_NOT_FOUND', `Plugin '${call.qualified.split('.', 1)[0]}' is not installed`);
    if (!found) return failed('PLUGIN_NOT_FOUND', `'${call.qualified}' is not in the catalog`);

    const timeout = AbortSignal.timeout(call.timeoutMs);
    const signal = AbortSignal.any([call.cancel, timeout, ...(call.lease ? [call.lease] : [])]);
    try {
      const output = await untilAborted(
        found.capability.execute({
          pluginConfig: call.pluginConfig,
          config: call.config,
          input: call.input,
          signal,
          timeoutMs: call.timeoutMs,
          idempotencyKey: call.idempotencyKey,
          logger: this.pluginLogger(call),
        }),
        signal,
      );
      return { status: 'succeeded', output: output === undefined ? null : output };
    } catch (error) {
      if (call.cancel.aborted) return { status: 'canceled', error: { code: 'CANCELED', message: 'Canceled' } };
      if (timeout.aborted) return timedOut(`Did not finish within ${call.timeoutMs} ms`);
      if (call.lease?.aborted) return failed('AGENT_CRASHED', 'The attempt outlived its lease and was abandoned');
      if (error instanceof ExecutionError)
        return error.code === 'AGENT_TIMEOUT' ? timedOut(error.message) : failed(error.code, error.message);
      this.logger.error({ msg: `${call.qualified} failed unexpectedly`, ...call.context, err: error });
      return failed('AGENT_CRASHED', `${call.qualified} failed unexpectedly`);
    }
  }

  private pluginLogger(call: CapabilityCall): PluginLogger {
    const fields = { kind: call.qualified, ...call.context };
    return {
      info: (message, extra) => this.logger.log({ msg: message, ...fields, ...extra }),
      warn: (message, extra) => this.logger.warn({ msg: message, ...fields, ...extra }),
    };
  }
}

export function failed(code: string, message: string): CallOutcome {
  return { status: 'failed', error: { code, message } };
}

function timedOut(message: string): CallOutcome {
  return { status: 'timed_out', error: { code: 'AGENT_TIMEOUT', message } };
}

/** Settles with the work, or rejects as soon as the signal aborts (a plugin that ignores it is left behind). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
