import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { HistoryPageQuery, PageQuery } from '../../../shared/pagination/page-query.dto';
import { Agent, AGENT_LIMITS, JsonObject } from '../domain/agent';
import { McpExposure } from '../../../shared/mcp/mcp-exposure';
import { EXECUTION_STATUSES, ExecutionStatus } from '../domain/execution';
import { ExecutionResponse } from '../execution.response';
import { Optional } from '../../../shared/http/optional.decorator';
import { UUID } from '../../../shared/http/uuid-param.pipe';

const KIND = /^[a-z][a-z0-9-]*\.[a-zA-Z][a-zA-Z0-9_-]*$/;
const { timeoutMs: TIMEOUT, maxAttempts: ATTEMPTS } = AGENT_LIMITS;

export class CreateAgentRequest {
  @ApiProperty({ maxLength: 200, example: 'Ticket triage' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name!: string;

  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiProperty({ example: 'transform.jsonata', description: '`<plugin>.<kind>`; the plugin must be installed' })
  @IsString()
  @Matches(KIND, { message: 'kind must look like <plugin>.<kind>, e.g. transform.jsonata' })
  kind!: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "Validated against the kind's configSchema" })
  @Optional()
  @IsObject()
  config?: JsonObject;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: 'JSON Schema the execute input must match',
  })
  @IsOptional()
  @IsObject()
  inputSchema?: JsonObject | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: false,
    nullable: true,
    properties: { expose: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 } },
    required: ['expose'],
    description: '`{ "expose": true }` serves the agent as a tool at `/api/mcp` (off when absent); `description` is what MCP clients see',
  })
  @ValidateIf((_, value) => value !== null)
  @IsOptional()
  @IsObject()
  mcp?: McpExposure | null;

  @ApiPropertyOptional({ minimum: TIMEOUT.min, maximum: TIMEOUT.max, default: TIMEOUT.default, description: 'Per attempt' })
  @Optional()
  @IsInt()
  @Min(TIMEOUT.min)
  @Max(TIMEOUT.max)
  timeoutMs?: number;

  @ApiPropertyOptional({ minimum: ATTEMPTS.min, maximum: ATTEMPTS.max, default: ATTEMPTS.default })
  @Optional()
  @IsInt()
  @Min(ATTEMPTS.min)
  @Max(ATTEMPTS.max)
  maxAttempts?: number;
}

export class UpdateAgentRequest {
  @ApiPropertyOptional({ maxLength: 200 })
  @Optional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Replaces the whole config' })
  @Optional()
  @IsObject()
  config?: JsonObject;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'null removes it' })
  @ValidateIf((_, value) => value !== null)
  @IsOptional()
  @IsObject()
  inputSchema?: JsonObject | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: false,
    nullable: true,
    properties: { expose: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 } },
    required: ['expose'],
    description: '`{ "expose": true }` serves the agent as a tool at `/api/mcp` (null removes it); `description` is what MCP clients see',
  })
  @ValidateIf((_, value) => value !== null)
  @IsOptional()
  @IsObject()
  mcp?: McpExposure | null;

  @ApiPropertyOptional({ minimum: TIMEOUT.min, maximum: TIMEOUT.max })
  @Optional()
  @IsInt()
  @Min(TIMEOUT.min)
  @Max(TIMEOUT.max)
  timeoutMs?: number;

  @ApiPropertyOptional({ minimum: ATTEMPTS.min, maximum: ATTEMPTS.max })
  @Optional()
  @IsInt()
  @Min(ATTEMPTS.min)
  @Max(ATTEMPTS.max)
  maxAttempts?: number;
}

export class AgentListQuery extends PageQuery {
  @ApiPropertyOptional({ example: 'http.agent' })
  @Optional()
  @IsString()
  @Matches(KIND, { message: 'kind must look like <plugin>.<kind>' })
  kind?: string;
}

export class HistoryQuery extends HistoryPageQuery {
  @ApiPropertyOptional({ enum: EXECUTION_STATUSES })
  @Optional()
  @IsIn(EXECUTION_STATUSES)
  status?: ExecutionStatus;
}

/** `GET /api/executions`: an agent's history query, across agents. */
export class ExecutionListQuery extends HistoryQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this agent's executions (one of another organization finds none)" })
  @Optional()
  @Matches(UUID, { message: '$property must be a UUID' })
  agentId?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only the execution with this id: a search by id' })
  @Optional()
  @Matches(UUID, { message: '$property must be a UUID' })
  id?: string;
}

export class AgentResponse {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ example: 'transform.jsonata' }) kind!: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) config!: JsonObject;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) inputSchema!: JsonObject | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    properties: { expose: { type: 'boolean' }, description: { type: 'string' } },
    description: 'Whether `/api/mcp` serves the agent as a tool',
  })
  mcp!: McpExposure | null;
  @ApiProperty() timeoutMs!: number;
  @ApiProperty() maxAttempts!: number;
  @ApiProperty({ format: 'uuid' }) createdBy!: string;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;

  static of(agent: Agent): AgentResponse {
    const p = agent.toProps();
    return {
      id: p.id,
      name: p.name,
      description: p.description,
      kind: p.kind,
      config: p.config,
      inputSchema: p.inputSchema,
      mcp: p.mcp,
      timeoutMs: p.timeoutMs,
      maxAttempts: p.maxAttempts,
      createdBy: p.createdBy,
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
    };
  }
}

export class AgentPageResponse {
  @ApiProperty({ type: [AgentResponse] }) data!: AgentResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}

export class ExecutionPageResponse {
  @ApiProperty({ type: [ExecutionResponse] }) data!: ExecutionResponse[];
  @ApiProperty({ type: String, nullable: true }) nextCursor!: string | null;
}
