import { Global, Module } from '@nestjs/common';
import { EventOutbox } from '../../shared/events/event-outbox';
import { OutboundHttp } from '../../shared/outbound/outbound-http';
import { OutboundPolicy } from '../../shared/outbound/outbound-policy';
import { OrganizationsModule } from '../organizations/organizations.module';
import { DeliveriesController } from './api/deliveries.controller';
import { WebhooksController } from './api/webhooks.controller';
import { DeliveriesService } from './application/deliveries.service';
import { DeliveryJobs } from './application/delivery-jobs';
import { WebhookOutbox } from './application/webhook-outbox';
import { WebhookSender } from './application/webhook-sender';
import { WebhooksService } from './application/webhooks.service';
import { EndpointRepository, MessageRepository } from './domain/webhook.repository';
import { TypeOrmEndpointRepository } from './infrastructure/typeorm-endpoint.repository';
import { TypeOrmMessageRepository } from './infrastructure/typeorm-message.repository';

/**
 * Webhooks: endpoints, the event outbox every durable change writes to, and deliveries as a
 * kind of durable job. Global because the outbox is the `EventOutbox` the core writes events to.
 */
@Global()
@Module({
  imports: [OrganizationsModule],
  controllers: [WebhooksController, DeliveriesController],
  providers: [
    WebhooksService,
    DeliveriesService,
    DeliveryJobs,
    WebhookSender,
    WebhookOutbox,
    { provide: EventOutbox, useExisting: WebhookOutbox },
    { provide: EndpointRepository, useClass: TypeOrmEndpointRepository },
    { provide: MessageRepository, useClass: TypeOrmMessageRepository },
    {
      provide: OutboundHttp,
      inject: [OutboundPolicy],
      useFactory: (policy: OutboundPolicy) => new OutboundHttp({ allowList: policy.allowList }),
    },
  ],
  exports: [EventOutbox],
})
export class WebhooksModule {}
