import { McpExposure } from '../../../shared/mcp/mcp-exposure';
import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { ConcurrencyPolicy, JsonObject, StepDefinition, WORKFLOW_LIMITS, WorkflowDefinition } from '../domain/definition';
import { Workflow } from '../domain/workflow';
import { WorkflowVersion } from '../domain/workflow.repository';

class RetryBody {
  @ApiProperty({ minimum: 1, maximum: 10 }) maxAttempts!: number;
  @ApiPropertyOptional({ minimum: 0, maximum: 600000, default: 1000, description: 'The wait after the first failed attempt' })
  backoffMs?: number;
  @ApiPropertyOptional({
    enum: ['fixed', 'exponential'],
    default: 'exponential',
    description: 'exponential doubles the wait after each attempt',
  })
  backoff?: 'fixed' | 'exponential';
  @ApiPropertyOptional({ minimum: 0, maximum: 3600000, description: 'The longest wait between attempts' }) maxBackoffMs?: number;
  @ApiPropertyOptional({
    type: [String],
    example: ['UPSTREAM_ERROR', 'AGENT_TIMEOUT'],
    description: 'Error codes tried again (others fail at once); by default UPSTREAM_ERROR, AGENT_TIMEOUT and AGENT_CRASHED',
  })
  retryOn?: string[];
}

class SleepBody {
  @ApiPropertyOptional({ minimum: 1, maximum: 86400, example: 3600, description: 'Seconds to wait (or use until)' }) seconds?: number;
  @ApiPropertyOptional({ example: 'input.remindAt', description: 'JSONata giving an ISO 8601 time to wait until (or use seconds)' })
  until?: string;
}

class SwitchCaseBody {
  @ApiProperty({ example: 'input.priority = "high"', description: 'JSONata; the first case that holds is taken' }) when!: string;
  @ApiProperty({ type: [String], description: 'The steps this case runs' }) steps!: string[];
}

class SwitchBody {
  @ApiProperty({ type: [SwitchCaseBody], maxItems: 50 }) cases!: SwitchCaseBody[];
  @ApiPropertyOptional({ type: [String], description: 'The steps run when no case holds' }) default?: string[];
}

class StepBody {
  @ApiProperty({ pattern: '^[a-z][a-z0-9_-]*$', example: 'classify' }) id!: string;
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'An agent of the organization (a step has exactly one of agent, action, sleep, switch)',
  })
  agent?: string;
  @ApiPropertyOptional({ example: 'transform.jsonata', description: '<plugin>.<action>' }) action?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "The action's config" }) with?: JsonObject;
  @ApiPropertyOptional({ type: SleepBody, description: 'A durable wait: no worker is held, a restart does not start it over' })
  sleep?: SleepBody;
  @ApiPropertyOptional({ type: SwitchBody, description: "A branch: the first case that holds runs its steps; the others' are skipped" })
  switch?: SwitchBody;
  @ApiPropertyOptional({
    example: '{ "text": steps.fetch.output.body }',
    description: 'JSONata over { input, steps: { <id>: { output, error } } }',
  })
  input?: string;
  @ApiPropertyOptional({ type: [String] }) needs?: string[];
  @ApiPropertyOptional({ example: 'input.priority = "high"', description: 'JSONata; false skips the step' }) if?: string;
  @ApiPropertyOptional({ type: RetryBody, description: 'For agent and action steps; attempts wait without holding a worker' })
  retry?: RetryBody;
  @ApiPropertyOptional({ minimum: 100, maximum: 3600000, description: 'For agent and action steps' }) timeoutMs?: number;
  @ApiPropertyOptional({
    enum: ['fail', 'continue'],
    default: 'fail',
    description: 'continue: the step is failed but the run goes on; later steps read steps.<id>.error',
  })
  onError?: 'fail' | 'continue';
}

class ConcurrencyBody {
  @ApiProperty({ minimum: 1, maximum: 1000, description: 'Runs with the same key in progress (running or waiting) at once' })
  limit!: number;
  @ApiPropertyOptional({
    example: 'input.customerId',
    description:
      "JSONata over { input }; its result, as a string of at most 200 characters, is the run's key. One key for every run when absent",
  })
  key?: string;
  @ApiPropertyOptional({
    enum: ['queue', 'cancelNew', 'cancelOldest'],
    default: 'queue',
    description:
      'A run beyond the limit: stays queued until a place frees (oldest first), is canceled, or cancels the oldest run in progress',
  })
  onLimit?: 'queue' | 'cancelNew' | 'cancelOldest';
}

const MCP_EXPOSURE = {
  type: 'object',
  additionalProperties: false,
  properties: { expose: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 } },
  required: ['expose'],
  nullable: true,
  description: '`{ "expose": true }` serves the workflow as a tool at `/api/mcp`; `description` is what MCP clients see',
} as ApiPropertyOptions;

/**
 * A workflow definition. Only the top-level fields are declared here; the whole definition is
 * checked by the domain (`definitionProblems`), which reports every problem at once.
 */
export class WorkflowDefinitionBody {
  @ApiProperty({ maxLength: 200 }) @Allow() name!: string;
  @ApiPropertyOptional({ maxLength: 2000 }) @Allow() description?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'JSON Schema the run input must match' })
  @Allow()
  inputSchema?: JsonObject;
  @ApiProperty({ type: [StepBody], maxItems: 100 }) @Allow() steps!: StepDefinition[];
  @ApiPropertyOptional({ description: 'JSONata over { input, steps }; every step output by id when absent' }) @Allow() output?: string;
  @ApiPropertyOptional({ minimum: 1000, maximum: 86400000, default: 3600000, description: 'The whole run' }) @Allow() timeoutMs?: number;
  @ApiPropertyOptional({ type: StepBody, description: 'An agent or action step run once when the run fails, with error in its context' })
  @Allow()
  onFailure?: StepDefinition;
  @ApiPropertyOptional({ type: ConcurrencyBody, description: 'How many of its runs may be in progress at once, per key' })
  @Allow()
  concurrency?: ConcurrencyPolicy;
  @ApiPropertyOptional(MCP_EXPOSURE)
  @Allow()
  mcp?: McpExposure;
}

export class WorkflowResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() version!: number;
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) inputSchema!: JsonObject | null;
  @ApiProperty({ type: [StepBody] }) steps!: StepDefinition[];
  @ApiProperty({ type: String, nullable: true }) output!: string | null;
  @ApiProperty() timeoutMs!: number;
  @ApiProperty({ type: StepBody, nullable: true }) onFailure!: StepDefinition | null;
  @ApiProperty({ type: ConcurrencyBody, nullable: true }) concurrency!: ConcurrencyPolicy | null;
  @ApiProperty(MCP_EXPOSURE) mcp!: McpExposure | null;
  @ApiProperty({ format: 'uuid' }) createdBy!: string;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;

  static of(workflow: Workflow): WorkflowResponse {
    const p = workflow.toProps();
    return {
      id: p.id,
      version: p.version,
      ...definitionFields(p.definition),
      createdBy: p.createdBy,
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
    };
  }
}

export class WorkflowPageResponse {
  @ApiProperty({ type: [WorkflowResponse] }) data!: WorkflowResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class WorkflowVersionResponse {
  @ApiProperty() version!: number;
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) inputSchema!: JsonObject | null;
  @ApiProperty({ type: [StepBody] }) steps!: StepDefinition[];
  @ApiProperty({ type: String, nullable: true }) output!: string | null;
  @ApiProperty() timeoutMs!: number;
  @ApiProperty({ type: StepBody, nullable: true }) onFailure!: StepDefinition | null;
  @ApiProperty({ type: ConcurrencyBody, nullable: true }) concurrency!: ConcurrencyPolicy | null;
  @ApiProperty(MCP_EXPOSURE) mcp!: McpExposure | null;
  @ApiProperty({ format: 'uuid' }) createdBy!: string;
  @ApiProperty() createdAt!: string;

  static of(v: WorkflowVersion): WorkflowVersionResponse {
    return { version: v.version, ...definitionFields(v.definition), createdBy: v.createdBy, createdAt: v.createdAt.toISOString() };
  }
}

export class WorkflowVersionPageResponse {
  @ApiProperty({ type: [WorkflowVersionResponse] }) data!: WorkflowVersionResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

function definitionFields(d: WorkflowDefinition) {
  return {
    name: d.name,
    description: d.description ?? '',
    inputSchema: d.inputSchema ?? null,
    steps: d.steps,
    output: d.output ?? null,
    timeoutMs: d.timeoutMs ?? WORKFLOW_LIMITS.runTimeoutMs.default,
    onFailure: d.onFailure ?? null,
    concurrency: d.concurrency ?? null,
    mcp: d.mcp ?? null,
  };
}
