import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import { type Principal, triggerOf } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { timeRange } from '../../../shared/pagination/page-query.dto';
import { LAST_EVENT_ID_DOC, LIVE_STREAM_DOC, LiveStreams } from '../../../shared/http/live-record';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { parseIdempotencyKey } from '../../../shared/idempotency/idempotency-keys';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { ExecuteQuery, ExecuteRequestBody } from '../../../shared/http/execute-request.dto';
import { RunsService } from '../application/runs.service';
import { WaitsService } from '../application/waits.service';
import { CompletedStepResponse, CompleteStepBody } from './wait.dto';
import { isRunFinished } from '../domain/run';
import { RetryRunRequest, RunHistoryQuery, RunPageResponse } from './run.dto';
import { runView } from './run-events';
import { RunItemPageResponse, RunItemResponse, RunResponse, RunWithStepsResponse } from '../run.response';

/** A workflow's runs: start one, its history, one run with its steps (and a map's items), answer a waiting step, cancel, retry. */
@ApiTags('workflows')
@ApiBearerAuth()
@Controller('api/workflows')
export class WorkflowRunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly waits: WaitsService,
    private readonly live: LiveStreams,
  ) {}

  @Post(':id/run')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Run: recorded and queued durably, then 200 with the finished run, or 202 with a Location if it is not done within `wait`',
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key and body within 24 h: the same run' })
  @ApiOkResponse({ type: RunWithStepsResponse })
  @ApiAcceptedResponse({ type: RunWithStepsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'WORKFLOW_NOT_FOUND', 'IDEMPOTENCY_KEY_REUSED', 'PAYLOAD_TOO_LARGE')
  async run(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: ExecuteQuery,
    @Body() body: ExecuteRequestBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<RunWithStepsResponse> {
    const run = await this.runs.run(caller.organizationId, {
      workflowId: id,
      input: body.input,
      waitSeconds: query.wait,
      idempotencyKey: parseIdempotencyKey(idempotencyKey),
      triggeredBy: triggerOf(caller),
    });
    if (!isRunFinished(run)) res.status(202).location(`/api/workflows/${id}/runs/${run.id}`);
    return RunWithStepsResponse.of(run);
  }

  @Get(':id/runs')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "The workflow's runs, newest first (steps left out; get one run for them)" })
  @ApiOkResponse({ type: RunPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'WORKFLOW_NOT_FOUND')
  async history(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: RunHistoryQuery,
  ): Promise<RunPageResponse> {
    const page = await this.runs.history(caller, id, query, {
      status: query.status,
      ...timeRange(query),
    });
    return { data: page.data.map((r) => RunResponse.of(r, false)), nextCursor: page.nextCursor };
  }

  @Get(':id/runs/:runId')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: 'One run with its steps' })
  @ApiOkResponse({ type: RunWithStepsResponse })
  @ApiErrors('VALIDATION_FAILED', 'RUN_NOT_FOUND')
  async getRun(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
  ): Promise<RunWithStepsResponse> {
    return RunWithStepsResponse.of(await this.runs.get(caller, id, runId));
  }

  @Get(':id/runs/:runId/events')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({
    summary: "The run's transitions as Server-Sent Events: `state` first, then `step` and `run` events until the run is final",
  })
  @ApiHeader(LAST_EVENT_ID_DOC)
  @ApiOkResponse(LIVE_STREAM_DOC)
  @ApiErrors('VALIDATION_FAILED', 'RUN_NOT_FOUND', 'RATE_LIMIT_EXCEEDED')
  async events(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const read = async () => runView(await this.runs.getLive(caller, id, runId));
    await this.live.stream(req, res, await read(), {
      organizationId: caller.organizationId,
      read,
      watch: (timeoutMs, check) => this.runs.watch(runId, timeoutMs, check),
    });
  }

  @Get(':id/runs/:runId/steps/:stepId/items')
  @RequiresScope('workflows:read')
  @AnyRole()
  @ApiOperation({ summary: "A map step's items in order: each one's status, attempts, output and error" })
  @ApiOkResponse({ type: RunItemPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'RUN_NOT_FOUND', 'STEP_NOT_FOUND')
  async items(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
    @Param('stepId') stepId: string,
    @Query() query: PageQuery,
  ): Promise<RunItemPageResponse> {
    const page = await this.runs.items(caller, id, runId, stepId, query);
    return { data: page.data.map(RunItemResponse.of), nextCursor: page.nextCursor };
  }

  @Post(':id/runs/:runId/steps/:stepId/complete')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Answer a waiting wait step (an approval): checked against the wait's schema and approvers; the step's output is { data, by, at } and the run goes on",
  })
  @ApiOkResponse({ type: CompletedStepResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'RUN_NOT_FOUND', 'STEP_NOT_FOUND', 'STEP_NOT_WAITING')
  async complete(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
    @Param('stepId') stepId: string,
    @Body() body: CompleteStepBody,
  ): Promise<CompletedStepResponse> {
    return CompletedStepResponse.of(runId, stepId, await this.waits.complete(caller, id, runId, stepId, body.data));
  }

  @Post(':id/runs/:runId/cancel')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a queued or running run; running steps are aborted' })
  @ApiOkResponse({ type: RunWithStepsResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'RUN_NOT_FOUND', 'NOT_CANCELABLE')
  async cancel(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
  ): Promise<RunWithStepsResponse> {
    return RunWithStepsResponse.of(await this.runs.cancel(caller, id, runId));
  }

  @Post(':id/runs/:runId/retry')
  @RequiresScope('workflows:run')
  @Roles('admin', 'member')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Retry a finished run: a new run with its input that keeps the old run's succeeded steps not downstream of `fromStep` " +
      '(default: of the steps that did not succeed) and runs the rest; answered like a run (200, or 202 with a Location)',
  })
  @ApiOkResponse({ type: RunWithStepsResponse })
  @ApiAcceptedResponse({ type: RunWithStepsResponse })
  @ApiErrors(
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'RUN_NOT_FOUND',
    'WORKFLOW_NOT_FOUND',
    'RUN_NOT_FINISHED',
    'RUN_ALREADY_RETRIED',
    'NOTHING_TO_RETRY',
  )
  async retry(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('runId', UuidParam) runId: string,
    @Query() query: ExecuteQuery,
    @Body() body: RetryRunRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<RunWithStepsResponse> {
    const run = await this.runs.retry(caller, id, runId, {
      fromStep: body.fromStep,
      version: body.version ?? 'same',
      waitSeconds: query.wait,
      triggeredBy: triggerOf(caller),
    });
    if (!isRunFinished(run)) res.status(202).location(`/api/workflows/${id}/runs/${run.id}`);
    return RunWithStepsResponse.of(run);
  }
}
