import { Injectable, Logger } from '@nestjs/common';
import { untilAborted } from '../../../shared/async/until-aborted';
import { DomainError } from '../../../shared/errors/domain-error';
import { canceled, failed, Outcome } from '../../../shared/jobs/outcome';
import { storable, storableText } from '../../../shared/json/storable';
import { AgentLoopPorts } from '../domain/agent-loop';
import { ExecutionError, installationSlug, PluginLogger } from '../domain/plugin';
import { PluginRegistry } from './plugin-registry';
import { PluginsService } from './plugins.service';

export interface CapabilityCall {
  organizationId: string;
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
  /** The tools and journal of an agent kind that calls tools. */
  agentLoop?: AgentLoopPorts;
}

/** Failures worth another attempt: the remote side may answer next time. */
const RETRYABLE = new Set(['UPSTREAM_ERROR', 'AGENT_TIMEOUT', 'AGENT_CRASHED']);

export function isRetryable(outcome: Outcome): outcome is Exclude<Outcome, { status: 'succeeded' }> {
  return outcome.status !== 'succeeded' && outcome.status !== 'canceled' && RETRYABLE.has(outcome.error.code);
}

/**
 * Calls a plugin's agent kind or action once, bounded by its timeout and aborted on cancel
 * or a lost lease, and turns whatever happens into an outcome: agent executions and
 * workflow steps share it, so a failure reads the same wherever it happened. Every
 * capability's result and error message comes back here, so here they are made `storable`
 * (lone surrogates U+FFFD, NULs removed): jsonb refuses them, and the record would not commit.
 */
@Injectable()
export class CapabilityRunner {
  private readonly logger = new Logger('Plugins');

  constructor(
    private readonly registry: PluginRegistry,
    private readonly plugins: PluginsService,
  ) {}

  /**
   * The installation's config (secrets decrypted), or null when the plugin is not installed.
   * Any other failure (the database is away) propagates: the caller's job is tried again.
   */
  async pluginConfig(organizationId: string, slug: string): Promise<Record<string, unknown> | null> {
    try {
      return (await this.plugins.get(organizationId, slug)).installation.config;
    } catch (error) {
      if (error instanceof DomainError && error.code === 'PLUGIN_NOT_FOUND') return null;
      throw error;
    }
  }

  /** A cache of installation configs for work that calls plugins many times (a worker, a run). */
  configs(ttlMs = Infinity): PluginConfigs {
    return new PluginConfigs(this, ttlMs);
  }

  async run(call: CapabilityCall): Promise<Outcome> {
    const found = this.registry.capability(call.kind, call.qualified);
    if (!call.pluginConfig) return failed('PLUGIN_NOT_FOUND', `Plugin '${installationSlug(call.qualified)}' is not installed`);
    if (!found) return failed('PLUGIN_NOT_FOUND', `'${call.qualified}' is not in the catalog`);

    const timeout = AbortSignal.timeout(call.timeoutMs);
    const signal = AbortSignal.any([call.cancel, timeout, ...(call.lease ? [call.lease] : [])]);
    try {
      const output = await untilAborted(
        found.capability.execute({
          organizationId: call.organizationId,
          pluginConfig: call.pluginConfig,
          config: call.config,
          input: call.input,
          signal,
          timeoutMs: call.timeoutMs,
          idempotencyKey: call.idempotencyKey,
          logger: this.pluginLogger(call),
          agentLoop: call.agentLoop,
        }),
        signal,
      );
      // What came from outside (a response body, a tool's text, a model's reply) as the database can hold it.
      return { status: 'succeeded', output: output === undefined ? null : storable(output) };
    } catch (error) {
      if (call.cancel.aborted) return canceled();
      if (timeout.aborted) return timedOut(`Did not finish within ${call.timeoutMs} ms`);
      if (call.lease?.aborted) return failed('AGENT_CRASHED', 'The attempt outlived its lease and was abandoned');
      if (error instanceof ExecutionError)
        return error.code === 'AGENT_TIMEOUT' ? timedOut(storableText(error.message)) : failed(error.code, storableText(error.message));
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

function timedOut(message: string): Outcome {
  return { status: 'timed_out', error: { code: 'AGENT_TIMEOUT', message } };
}

/**
 * Installation configs looked up once per organization and plugin for `ttlMs` (a changed
 * installation is seen after that); a lookup that failed is forgotten at once, so the next
 * one tries again.
 */
export class PluginConfigs {
  private readonly cache = new Map<string, Promise<Record<string, unknown> | null>>();

  constructor(
    private readonly runner: Pick<CapabilityRunner, 'pluginConfig'>,
    private readonly ttlMs: number,
  ) {}

  /** `qualified` is an agent kind or an action (`<plugin>.<name>`, or a connection's `mcp.<server>.<tool>`). */
  get(organizationId: string, qualified: string): Promise<Record<string, unknown> | null> {
    const slug = installationSlug(qualified);
    const key = `${organizationId}:${slug}`;
    let config = this.cache.get(key);
    if (!config) {
      config = this.runner.pluginConfig(organizationId, slug);
      config.catch(() => this.cache.delete(key));
      this.cache.set(key, config);
      if (Number.isFinite(this.ttlMs)) setTimeout(() => this.cache.delete(key), this.ttlMs).unref();
    }
    return config;
  }
}
