import { Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AppConfig } from '../../../config/app-config';
import { Public } from '../../../shared/auth/access.decorators';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { rawBodyReader } from '../../../shared/http/request-body';
import { Hooks, hookStatus } from '../application/hooks';
import { HookResponse } from './trigger.dto';

/** The public URLs of inbound webhook triggers. */
@ApiTags('hooks')
@Controller('api/hooks')
export class HooksController {
  private readonly readBody: (req: Request, res: Response) => Promise<Buffer>;

  constructor(
    private readonly hooks: Hooks,
    config: AppConfig,
  ) {
    this.readBody = rawBodyReader(config.http.bodyLimitBytes);
  }

  @Post(':triggerId')
  @Public()
  @HttpCode(202)
  @ApiOperation({
    summary: "A sender's request to a webhook trigger: no bearer token, authenticated by the trigger's scheme on the raw body",
    description:
      'Any content type (JSON is parsed, other bodies are kept as text), up to 1 MiB. Each authenticated request is recorded and ' +
      'starts one run in the same transaction; a repeated delivery (same dedupe key) answers the earlier run. async triggers ' +
      "answer 202 at once; sync ones wait up to their waitSeconds and answer 200 with the run's output.",
  })
  @ApiHeader({ name: 'webhook-signature', required: false, description: 'standard-webhooks: with webhook-id and webhook-timestamp' })
  @ApiAcceptedResponse({ type: HookResponse, description: 'Recorded; the run is queued (or, sync, not finished in time)' })
  @ApiOkResponse({ type: HookResponse, description: 'sync: the run finished; its output' })
  @ApiErrors('VALIDATION_FAILED', 'UNAUTHORIZED', 'TRIGGER_NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'RATE_LIMIT_EXCEEDED')
  async receive(
    @Param('triggerId') triggerId: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<HookResponse> {
    const answer = await this.hooks.receive(
      triggerId,
      {
        headers: headersOf(req),
        query: req.query as Record<string, unknown>,
        readBody: () => this.readBody(req, res),
        source: req.ip ?? req.socket.remoteAddress ?? '',
      },
      (headers) => res.set(headers),
    );
    res.status(hookStatus(answer));
    res.location(`/api/workflows/${answer.run.workflowId}/runs/${answer.run.id}`);
    return HookResponse.of(answer);
  }
}

function headersOf(req: Request): Record<string, string> {
  return Object.fromEntries(
    Object.entries(req.headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]],
    ),
  );
}
