import { Injectable, OnModuleInit } from '@nestjs/common';
import { withPerson } from '../../../shared/auth/principal';
import { DomainError, ErrorDetail } from '../../../shared/errors/domain-error';
import { UUID } from '../../../shared/http/uuid-param.pipe';
import { MAX_NESTING_DEPTH } from '../../../shared/jobs/nesting';
import { AgentTools } from '../../agents/application/tools/agent-tools';
import { ToolConfig, ToolDescription, ToolInvocation, toolName, ToolSource } from '../../agents/application/tools/tool-source';
import { ToolResult } from '../../plugins/domain/agent-loop';
import { WorkflowRepository } from '../../workflows/domain/workflow.repository';
import { isRunFinished } from '../domain/run';
import { RunsService } from './runs.service';

/**
 * `{ "workflow": "<id>" }`: a workflow of the organization, run with the model's arguments as its
 * input and awaited; its output is the tool's. The run is started under the call's idempotency
 * key, so an attempt after a crash awaits the same run instead of starting another.
 */
@Injectable()
export class WorkflowToolSource implements ToolSource, OnModuleInit {
  readonly key = 'workflow';

  constructor(
    private readonly tools: AgentTools,
    private readonly workflows: WorkflowRepository,
    private readonly runs: RunsService,
  ) {}

  onModuleInit(): void {
    this.tools.register(this);
  }

  async describe(organizationId: string, tool: ToolConfig, path: string): Promise<ToolDescription | ErrorDetail[]> {
    const id = tool.workflow;
    const workflow = typeof id === 'string' && UUID.test(id) ? await this.workflows.find(organizationId, id) : null;
    if (!workflow) return [{ path: `${path}.workflow`, message: `no workflow '${String(id)}' in this organization` }];
    const { name, description, inputSchema } = workflow.definition;
    return { defaultName: toolName('workflow_', name), description: description || `Workflow '${name}'`, parameters: inputSchema ?? null };
  }

  async call(tool: ToolConfig, invocation: ToolInvocation): Promise<ToolResult> {
    if (invocation.depth + 1 > MAX_NESTING_DEPTH)
      return {
        status: 'failed',
        error: { code: 'WORKFLOW_DEPTH', message: `Runs and executions start one another at most ${MAX_NESTING_DEPTH} deep` },
      };
    let run;
    try {
      run = await this.runs.run(invocation.organizationId, {
        workflowId: tool.workflow as string,
        input: invocation.input,
        waitSeconds: Math.max(0, invocation.deadline - Date.now()) / 1000,
        idempotencyKey: invocation.idempotencyKey,
        triggeredBy: { type: 'agent_execution', id: invocation.executionId, ...withPerson(invocation.person) },
        parent: { runId: null, depth: invocation.depth },
      });
    } catch (error) {
      if (error instanceof DomainError) return { status: 'failed', error: { code: error.code, message: error.message } };
      throw error;
    }
    if (!isRunFinished(run))
      return { status: 'failed', error: { code: 'TOOL_TIMEOUT', message: `Run ${run.id} of the workflow did not finish in time` } };
    if (run.status === 'succeeded') return { status: 'succeeded', output: run.output };
    return { status: 'failed', error: run.error ?? { code: 'RUN_FAILED', message: `Run ${run.id} ended ${run.status}` } };
  }
}
