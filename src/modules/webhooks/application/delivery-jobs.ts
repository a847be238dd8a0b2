import { Injectable } from '@nestjs/common';
import { DurableJobKind, DurableJobs } from '../../../queue/durable-jobs';
import { WebhookMessage } from '../domain/message';
import { MessageRepository, StartedDelivery, UnfinishedMessage } from '../domain/webhook.repository';

/** Seconds a worker holds a delivery's job: the 15 s request timeout and some slack. */
export const DELIVERY_JOB_OPTIONS = { leaseSeconds: 30, retryLimit: 3 };
export const DELIVERY_QUEUE = 'webhook-delivery';

/** What a delivery job carries. */
export function deliveryJobData(messageId: string): object {
  return { messageId };
}

/**
 * Webhook deliveries as a kind of durable job: one job per attempt of a message on
 * `webhook-delivery`. A failed attempt answers `later`: the message waits `queued` on a new job
 * that starts at its next retry time (the schedule is the sender's, not the queue's backoff);
 * pg-boss's own retries only cover lost workers.
 */
@Injectable()
export class DeliveryJobs extends DurableJobKind<WebhookMessage, StartedDelivery, UnfinishedMessage> {
  constructor(core: DurableJobs, messages: MessageRepository) {
    super(core, {
      name: 'webhook',
      queue: DELIVERY_QUEUE,
      batchSize: 32,
      share: 'deliveries',
      records: messages,
      metrics: {
        total: 'webhook_messages_total',
        duration: 'webhook_message_duration_seconds',
        noun: 'Webhook messages',
        labelNames: ['type'],
      },
      recordOf: (started) => started.message,
      labels: (of) => ({ type: 'message' in of ? of.message.type : 'unknown' }),
      jobData: deliveryJobData,
      recordId: (data) => (data as { messageId: string }).messageId,
      sendOptions: () => DELIVERY_JOB_OPTIONS,
      resumeOptions: () => DELIVERY_JOB_OPTIONS,
      recoverable: (u) => u.attempts < 20,
      lost: { code: 'DELIVERY_LOST', message: 'The delivery was interrupted by lost workers too often' },
    });
  }
}
