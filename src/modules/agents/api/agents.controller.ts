import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import { type Principal, triggerOf } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { timeRange } from '../../../shared/pagination/page-query.dto';
import { LAST_EVENT_ID_DOC, LIVE_STREAM_DOC, LiveStreams } from '../../../shared/http/live-record';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { parseIdempotencyKey } from '../../../shared/idempotency/idempotency-keys';
import { AgentsService } from '../application/agents.service';
import { ExecutionsService } from '../application/executions.service';
import { isFinished } from '../domain/execution';
import {
  AgentListQuery,
  AgentPageResponse,
  AgentResponse,
  CreateAgentRequest,
  ExecutionPageResponse,
  HistoryQuery,
  UpdateAgentRequest,
} from './agent.dto';
import { ExecuteQuery, ExecuteRequestBody } from '../../../shared/http/execute-request.dto';
import { ExecutionResponse } from '../execution.response';
import { executionView } from './execution-events';
import { ExecutionDetailResponse, TranscriptPageResponse, TurnResponse } from '../transcript.response';
import { PageQuery } from '../../../shared/pagination/page-query.dto';

/** Turns of a conversation shown in an execution's GET; GET .../transcript pages through the rest. */
const FIRST_TURNS = 20;

/** `Accept: text/event-stream` (and not JSON first): execute answers with the execution's live stream. */
function wantsEventStream(req: Request): boolean {
  return req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream';
}

@ApiTags('agents')
@ApiBearerAuth()
@Controller('api/agents')
export class AgentsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly executions: ExecutionsService,
    private readonly live: LiveStreams,
  ) {}

  @Post()
  @RequiresScope('agents:write')
  @Roles('admin')
  @ApiOperation({ summary: "Register an agent: a plugin's agent kind with its config" })
  @ApiCreatedResponse({ type: AgentResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'PLUGIN_NOT_FOUND')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: CreateAgentRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AgentResponse> {
    const agent = await this.agents.create(caller, body);
    res.location(`/api/agents/${agent.id}`);
    return AgentResponse.of(agent);
  }

  @Get()
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({ summary: "The organization's agents, newest first" })
  @ApiOkResponse({ type: AgentPageResponse })
  @ApiErrors('VALIDATION_FAILED')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: AgentListQuery): Promise<AgentPageResponse> {
    const page = await this.agents.list(caller, query, query.kind);
    return { data: page.data.map(AgentResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({ summary: 'One agent' })
  @ApiOkResponse({ type: AgentResponse })
  @ApiErrors('VALIDATION_FAILED', 'AGENT_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.get(caller.organizationId, id));
  }

  @Patch(':id')
  @RequiresScope('agents:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Change an agent (its kind is fixed); executions already queued run with the new config' })
  @ApiOkResponse({ type: AgentResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_CYCLE', 'FORBIDDEN', 'AGENT_NOT_FOUND', 'PLUGIN_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: UpdateAgentRequest,
  ): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.change(caller, id, body));
  }

  @Delete(':id')
  @RequiresScope('agents:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an agent and its history; refused while workflows use it' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'AGENT_NOT_FOUND', 'AGENT_IN_USE')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.agents.delete(caller, id);
  }

  @Post(':id/execute')
  @RequiresScope('agents:execute')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Execute: recorded and queued durably, then 200 with the finished execution, or 202 with a Location if it is not done within `wait`; ' +
      "with `Accept: text/event-stream`, 200 with the execution's live stream (as GET .../events) until it is final",
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key and body within 24 h: the same execution' })
  @ApiOkResponse({ type: ExecutionResponse })
  @ApiAcceptedResponse({ type: ExecutionResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'AGENT_NOT_FOUND', 'PLUGIN_NOT_FOUND', 'IDEMPOTENCY_KEY_REUSED', 'PAYLOAD_TOO_LARGE')
  async execute(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: ExecuteQuery,
    @Body() body: ExecuteRequestBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const streamed = wantsEventStream(req);
    const execution = await this.executions.execute(caller.organizationId, {
      agentId: id,
      input: body.input,
      waitSeconds: streamed ? 0 : query.wait,
      idempotencyKey: parseIdempotencyKey(idempotencyKey),
      triggeredBy: triggerOf(caller),
    });
    const location = `/api/agents/${id}/history/${execution.id}`;
    if (streamed) {
      res.location(location);
      return this.stream(caller, id, execution.id, req, res);
    }
    if (!isFinished(execution)) res.status(202).location(location);
    res.json(ExecutionResponse.of(execution));
  }

  @Get(':id/history')
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({ summary: "The agent's executions, newest first" })
  @ApiOkResponse({ type: ExecutionPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'AGENT_NOT_FOUND')
  async history(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: HistoryQuery,
  ): Promise<ExecutionPageResponse> {
    const page = await this.executions.history(caller, id, query, {
      status: query.status,
      ...timeRange(query),
    });
    return { data: page.data.map(ExecutionResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':id/history/:executionId')
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({
    summary: 'One execution, whole: for an agent that calls tools, with its conversation (the first turns, then GET .../transcript)',
  })
  @ApiOkResponse({ type: ExecutionDetailResponse })
  @ApiErrors('VALIDATION_FAILED', 'EXECUTION_NOT_FOUND')
  async execution(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('executionId', UuidParam) executionId: string,
  ): Promise<ExecutionDetailResponse> {
    const { execution, totals, first } = await this.executions.detail(caller, id, executionId, FIRST_TURNS);
    return ExecutionDetailResponse.detail(execution, totals, first);
  }

  @Get(':id/history/:executionId/transcript')
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({
    summary: "The execution's conversation, a page of turns in order, each with its tool calls (empty for an agent that calls no tools)",
  })
  @ApiOkResponse({ type: TranscriptPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'EXECUTION_NOT_FOUND')
  async transcript(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('executionId', UuidParam) executionId: string,
    @Query() query: PageQuery,
  ): Promise<TranscriptPageResponse> {
    const page = await this.executions.transcript(caller, id, executionId, query);
    return { data: page.data.map(TurnResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':id/history/:executionId/events')
  @RequiresScope('agents:read')
  @AnyRole()
  @ApiOperation({
    summary:
      "The execution's transitions as Server-Sent Events: `state` first, then `turn` and `tool` events of a conversation, `delta` events of the model's text, and `execution` events until it is final",
  })
  @ApiHeader(LAST_EVENT_ID_DOC)
  @ApiOkResponse(LIVE_STREAM_DOC)
  @ApiErrors('VALIDATION_FAILED', 'EXECUTION_NOT_FOUND', 'RATE_LIMIT_EXCEEDED')
  async events(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('executionId', UuidParam) executionId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.stream(caller, id, executionId, req, res);
  }

  /** The execution's live stream (see LiveStreams), with the model's text as it comes (from this process). */
  private async stream(caller: Principal, agentId: string, executionId: string, req: Request, res: Response): Promise<void> {
    const read = async () => {
      const { execution, turns } = await this.executions.withTurns(caller, agentId, executionId);
      return executionView(execution, turns);
    };
    await this.live.stream(req, res, await read(), {
      organizationId: caller.organizationId,
      read,
      watch: (timeoutMs, check) => this.executions.watch(executionId, timeoutMs, check),
      follow: (emit) => this.executions.followDeltas(executionId, (delta) => emit('delta', delta)),
    });
  }

  @Post(':id/history/:executionId/cancel')
  @RequiresScope('agents:execute')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a queued or running execution; a running plugin call is aborted' })
  @ApiOkResponse({ type: ExecutionResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'EXECUTION_NOT_FOUND', 'NOT_CANCELABLE')
  async cancel(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('executionId', UuidParam) executionId: string,
  ): Promise<ExecutionResponse> {
    return ExecutionResponse.of(await this.executions.cancel(caller, id, executionId));
  }

  @Post(':id/history/:executionId/retry')
  @RequiresScope('agents:execute')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Retry a finished execution that did not succeed: a new execution of the agent with its input; answered like execute (200, or 202 with a Location)',
  })
  @ApiOkResponse({ type: ExecutionResponse })
  @ApiAcceptedResponse({ type: ExecutionResponse })
  @ApiErrors(
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'EXECUTION_NOT_FOUND',
    'EXECUTION_NOT_FINISHED',
    'EXECUTION_ALREADY_RETRIED',
    'NOTHING_TO_RETRY',
  )
  async retry(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('executionId', UuidParam) executionId: string,
    @Query() query: ExecuteQuery,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ExecutionResponse> {
    const execution = await this.executions.retry(caller, id, executionId, { waitSeconds: query.wait, triggeredBy: triggerOf(caller) });
    if (!isFinished(execution)) res.status(202).location(`/api/agents/${id}/history/${execution.id}`);
    return ExecutionResponse.of(execution);
  }
}
