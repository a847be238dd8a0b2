import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JobQueue } from '../../../queue/job-queue';
import { EventOutbox, PlatformEvent } from '../../../shared/events/event-outbox';
import { OrganizationShares } from '../../../shared/fairness/organization-shares';
import { subscribesTo } from '../domain/endpoint';
import { messagePayload, WebhookMessage } from '../domain/message';
import { EndpointRepository, MessageRepository } from '../domain/webhook.repository';
import { DELIVERY_JOB_OPTIONS, DELIVERY_QUEUE, deliveryJobData } from './delivery-jobs';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

/**
 * The outbox: in the transaction of the change that raised them, each event becomes one
 * message per endpoint of its organization that wants it, their delivery jobs sent with one
 * statement in the same transaction. A message for a disabled endpoint is kept as `skipped`.
 */
@Injectable()
export class WebhookOutbox extends EventOutbox {
  constructor(
    private readonly endpoints: EndpointRepository,
    private readonly messages: MessageRepository,
    /** The queue itself, not DeliveryJobs: the durable-job core depends on this outbox. */
    private readonly queue: JobQueue,
    private readonly shares: OrganizationShares,
  ) {
    super();
  }

  async publish(events: PlatformEvent[]): Promise<void> {
    if (!events.length) return;
    const endpoints = await this.endpoints.subscriptions([...new Set(events.map((e) => e.organizationId))]);
    if (!endpoints.length) return;
    const now = new Date();
    const messages: WebhookMessage[] = events.flatMap((event) =>
      endpoints
        .filter((endpoint) => endpoint.organizationId === event.organizationId && subscribesTo(endpoint, event.type))
        .map((endpoint) => ({
          id: timeOrderedId(),
          organizationId: event.organizationId,
          endpointId: endpoint.id,
          type: event.type,
          payload: messagePayload(event.type, event.data, now),
          status: endpoint.enabled ? 'queued' : 'skipped',
          attempts: 0,
          jobId: endpoint.enabled ? randomUUID() : null,
          error: endpoint.enabled ? null : { code: 'ENDPOINT_DISABLED', message: 'The endpoint was disabled when the event happened' },
          nextAttemptAt: null,
          createdAt: now,
          finishedAt: endpoint.enabled ? null : now,
        })),
    );
    if (!messages.length) return;
    await this.messages.insertMany(messages);
    // Each delivery job carries its organization, whose share of the workers caps its deliveries in flight.
    const organizations = [...new Set(messages.map((m) => m.organizationId))];
    const groups = new Map(await Promise.all(organizations.map(async (id) => [id, await this.shares.group(id)] as const)));
    // An organization raising many events at once goes behind the others' (see OrganizationShares.priority).
    const priorities = new Map(
      organizations.map((id) => [id, this.shares.priority(id, messages.filter((m) => m.organizationId === id).length)]),
    );
    await this.queue.sendMany(
      DELIVERY_QUEUE,
      messages.flatMap((m) =>
        m.jobId
          ? [
              {
                data: deliveryJobData(m.id),
                options: {
                  ...DELIVERY_JOB_OPTIONS,
                  id: m.jobId,
                  group: groups.get(m.organizationId),
                  priority: priorities.get(m.organizationId),
                },
              },
            ]
          : [],
      ),
    );
  }

  committed(): void {
    this.queue.wake(DELIVERY_QUEUE);
  }
}
