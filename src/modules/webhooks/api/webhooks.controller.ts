import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { PageQuery } from '../../../shared/pagination/page-query.dto';
import { WebhooksService } from '../application/webhooks.service';
import {
  CreatedWebhookResponse,
  CreateWebhookRequest,
  EventTypeListResponse,
  EventTypeResponse,
  RotatedSecretResponse,
  RotateSecretRequest,
  UpdateWebhookRequest,
  WebhookPageResponse,
  WebhookResponse,
} from './webhook.dto';

@ApiTags('webhooks')
@ApiBearerAuth()
@Controller('api')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post('webhooks')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Register a webhook endpoint (Team tier and up); the answer shows its signing secret, once' })
  @ApiCreatedResponse({ type: CreatedWebhookResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_LIMIT_REACHED')
  async create(
    @CurrentPrincipal() caller: Principal,
    @Body() body: CreateWebhookRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CreatedWebhookResponse> {
    const created = await this.webhooks.create(caller.organizationId, body);
    res.location(`/api/webhooks/${created.endpoint.id}`);
    return CreatedWebhookResponse.from(created);
  }

  @Get('webhooks')
  @RequiresScope('webhooks:read')
  @AnyRole()
  @ApiOperation({ summary: "The organization's webhook endpoints, newest first" })
  @ApiOkResponse({ type: WebhookPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FEATURE_NOT_AVAILABLE')
  async list(@CurrentPrincipal() caller: Principal, @Query() query: PageQuery): Promise<WebhookPageResponse> {
    const page = await this.webhooks.list(caller.organizationId, query);
    return { data: page.data.map(WebhookResponse.of), nextCursor: page.nextCursor };
  }

  @Get('webhooks/:id')
  @RequiresScope('webhooks:read')
  @AnyRole()
  @ApiOperation({ summary: 'One webhook endpoint' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors('VALIDATION_FAILED', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND')
  async get(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<WebhookResponse> {
    return WebhookResponse.of(await this.webhooks.get(caller.organizationId, id));
  }

  @Patch('webhooks/:id')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @ApiOperation({ summary: 'Change an endpoint; a new url is checked by the SSRF guard again' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND')
  async update(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: UpdateWebhookRequest,
  ): Promise<WebhookResponse> {
    return WebhookResponse.of(await this.webhooks.update(caller.organizationId, id, body));
  }

  @Delete('webhooks/:id')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove an endpoint' })
  @ApiNoContentResponse()
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND')
  async delete(@CurrentPrincipal() caller: Principal, @Param('id', UuidParam) id: string): Promise<void> {
    await this.webhooks.delete(caller.organizationId, id);
  }

  @Post('webhooks/:id/rotate-secret')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({ summary: 'A new signing secret, shown once; the previous one also signs during the grace window' })
  @ApiOkResponse({ type: RotatedSecretResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND')
  async rotateSecret(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: RotateSecretRequest,
  ): Promise<RotatedSecretResponse> {
    return RotatedSecretResponse.of(await this.webhooks.rotateSecret(caller.organizationId, id, body.graceSeconds));
  }

  @Get('webhook-event-types')
  @RequiresScope('webhooks:read')
  @AnyRole()
  @ApiOperation({ summary: 'The event types an endpoint may subscribe to, each with the JSON Schema of its data and an example' })
  @ApiOkResponse({ type: EventTypeListResponse })
  @ApiErrors('FEATURE_NOT_AVAILABLE')
  async eventTypes(@CurrentPrincipal() caller: Principal): Promise<EventTypeListResponse> {
    return { data: (await this.webhooks.eventTypes(caller.organizationId)).map(EventTypeResponse.of) };
  }
}
