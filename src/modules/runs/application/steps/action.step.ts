import { Injectable } from '@nestjs/common';
import { CapabilityRunner } from '../../../plugins/application/capability-runner';
import { installationSlug } from '../../../plugins/domain/plugin';
import { DefinitionContext, StepDefinition } from '../../../workflows/domain/definition';
import { StepAnswer, StepContext, StepKind } from './step-kind';

/** Longest a plugin action may take unless its step sets `timeoutMs`. */
export const ACTION_TIMEOUT_MS = 30_000;

/** `{ "action": "<plugin>.<action>", "with": { ...its config } }`: one call of a plugin's action. */
@Injectable()
export class ActionStep implements StepKind {
  readonly key = 'action';
  /** `<plugin>.<action>`, or a connected MCP server's tool `mcp.<server>.<tool>`. */
  readonly schema = {
    type: 'string',
    maxLength: 200,
    pattern: '^(?:[a-z][a-z0-9-]*\\.[a-zA-Z][a-zA-Z0-9_-]*|mcp\\.[a-z][a-z0-9-]*\\.[A-Za-z0-9_.-]+)$',
  };
  readonly fields = { with: { type: 'object' } };
  readonly callsOut = true;

  constructor(private readonly runner: CapabilityRunner) {}

  problems(step: StepDefinition, at: string, context: DefinitionContext) {
    const qualified = step.action!;
    const found = context.action(qualified);
    if (found === 'plugin-not-installed')
      return [{ path: `${at}.action`, message: `step '${step.id}': plugin '${installationSlug(qualified)}' is not installed` }];
    if (found === 'unknown') return [{ path: `${at}.action`, message: `step '${step.id}': no action '${qualified}' in the catalog` }];
    return context
      .actionConfigProblems(qualified, step.with ?? {})
      .map((p) => ({ path: `${at}.with${p.path ? `.${p.path}` : ''}`, message: `step '${step.id}': ${p.message}` }));
  }

  async run({ run, step, input, signal, pluginConfigs, callId }: StepContext): Promise<StepAnswer> {
    return this.runner.run({
      kind: 'actions',
      qualified: step.action!,
      organizationId: run.organizationId,
      pluginConfig: await pluginConfigs.get(run.organizationId, step.action!),
      config: step.with ?? {},
      input,
      timeoutMs: step.timeoutMs ?? ACTION_TIMEOUT_MS,
      idempotencyKey: `${run.id}:${callId}`,
      cancel: signal,
      context: { runId: run.id, stepId: callId },
    });
  }
}
