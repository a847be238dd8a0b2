import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AnyRole, CurrentPrincipal, RequiresScope, Roles } from '../../../shared/auth/access.decorators';
import type { Principal } from '../../../shared/auth/principal';
import { ApiErrors } from '../../../shared/http/api-errors.decorator';
import { UuidParam } from '../../../shared/http/uuid-param.pipe';
import { DeliveriesService } from '../application/deliveries.service';
import {
  DeliveryDetailResponse,
  DeliveryListQuery,
  DeliveryPageResponse,
  DeliveryResponse,
  RecoverRequest,
  RecoverResponse,
  TestDeliveryResponse,
} from './delivery.dto';

/** The delivery log of an endpoint: messages with their attempts, redeliver, recover and test. */
@ApiTags('webhooks')
@ApiBearerAuth()
@Controller('api/webhooks')
export class DeliveriesController {
  constructor(private readonly deliveries: DeliveriesService) {}

  @Get(':id/deliveries')
  @RequiresScope('webhooks:read')
  @AnyRole()
  @ApiOperation({ summary: "The endpoint's messages, newest first (queued and running show as pending); kept 30 days" })
  @ApiOkResponse({ type: DeliveryPageResponse })
  @ApiErrors('VALIDATION_FAILED', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND')
  async list(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Query() query: DeliveryListQuery,
  ): Promise<DeliveryPageResponse> {
    const page = await this.deliveries.list(caller.organizationId, id, query, {
      status: query.status,
      since: query.since ? new Date(query.since) : undefined,
    });
    return { data: page.data.map(DeliveryResponse.of), nextCursor: page.nextCursor };
  }

  @Get(':id/deliveries/:messageId')
  @RequiresScope('webhooks:read')
  @AnyRole()
  @ApiOperation({ summary: 'One message with its payload and the log of its attempts' })
  @ApiOkResponse({ type: DeliveryDetailResponse })
  @ApiErrors('VALIDATION_FAILED', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND', 'WEBHOOK_MESSAGE_NOT_FOUND')
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('messageId', UuidParam) messageId: string,
  ): Promise<DeliveryDetailResponse> {
    return DeliveryDetailResponse.from(await this.deliveries.get(caller.organizationId, id, messageId));
  }

  @Post(':id/deliveries/:messageId/redeliver')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send a finished message again, with the same webhook-id; 409 while it is pending or the endpoint is disabled' })
  @ApiAcceptedResponse({ type: DeliveryResponse })
  @ApiErrors(
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'FEATURE_NOT_AVAILABLE',
    'WEBHOOK_NOT_FOUND',
    'WEBHOOK_MESSAGE_NOT_FOUND',
    'WEBHOOK_MESSAGE_PENDING',
    'WEBHOOK_DISABLED',
  )
  async redeliver(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Param('messageId', UuidParam) messageId: string,
  ): Promise<DeliveryResponse> {
    return DeliveryResponse.of(await this.deliveries.redeliver(caller.organizationId, id, messageId));
  }

  @Post(':id/recover')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send again, in the background, every failed or skipped message created since a time (within 30 days)' })
  @ApiAcceptedResponse({ type: RecoverResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND', 'WEBHOOK_DISABLED')
  async recover(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Body() body: RecoverRequest,
  ): Promise<RecoverResponse> {
    const since = await this.deliveries.recover(caller.organizationId, id, new Date(body.since));
    return { since: since.toISOString() };
  }

  @Post(':id/test')
  @RequiresScope('webhooks:write')
  @Roles('admin')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send a webhook.test event to this endpoint only; answers its first attempt (202 without it when none came within 15 s)',
  })
  @ApiOkResponse({ type: TestDeliveryResponse })
  @ApiAcceptedResponse({ type: TestDeliveryResponse })
  @ApiErrors('VALIDATION_FAILED', 'FORBIDDEN', 'FEATURE_NOT_AVAILABLE', 'WEBHOOK_NOT_FOUND', 'WEBHOOK_DISABLED')
  async test(
    @CurrentPrincipal() caller: Principal,
    @Param('id', UuidParam) id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<TestDeliveryResponse> {
    const sent = await this.deliveries.test(caller.organizationId, id);
    if (!sent.attempt) res.status(202);
    return TestDeliveryResponse.of(sent);
  }
}
