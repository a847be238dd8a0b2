import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Transactional } from '@nestjs-cls/transactional';
import { AppConfig } from '../../../config/app-config';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Job, JobResult } from 'pg-boss';
import { JobQueue } from '../../../queue/job-queue';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { WebhookEndpoint } from '../domain/endpoint';
import { DeliveryAttempt, messagePayload, MessageSummary, WebhookMessage } from '../domain/message';
import { DeliveryFilter, MessageRepository } from '../domain/webhook.repository';
import { DELIVERY_JOB_OPTIONS, DeliveryJobs } from './delivery-jobs';
import { WebhooksService } from './webhooks.service';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

export const RECOVER_QUEUE = 'webhook-recover';
/** Messages requeued per transaction by a recover. */
const RECOVER_PAGE = 500;
const RECOVER_JOB_OPTIONS = { leaseSeconds: 300, retryLimit: 5 };
/** How long a test waits for its first attempt: the sender's request timeout. */
const TEST_WAIT_MS = 15_000;
const TEST_POLL_MS = 100;

export interface DeliveryDetail {
  message: WebhookMessage;
  attempts: DeliveryAttempt[];
}

/** A test event: its message, and its first attempt when it was made within the wait. */
export interface TestDelivery {
  messageId: string;
  attempt: DeliveryAttempt | null;
}

interface RecoverJob {
  endpointId: string;
  since: string;
}

/**
 * The delivery log of an endpoint and what an admin does with it: redeliver one message,
 * recover every failed or skipped one since a time (a background job), send a test event.
 * Every use case checks the tier and the endpoint through WebhooksService first.
 *
 * A redelivered or recovered message keeps its id (so its `webhook-id`) and its attempt count:
 * once its retry schedule is used up, a redelivery is one more attempt.
 */
@Injectable()
export class DeliveriesService implements OnModuleInit {
  private readonly logger = new Logger('WebhookDeliveries');

  constructor(
    private readonly webhooks: WebhooksService,
    private readonly messages: MessageRepository,
    private readonly deliveries: DeliveryJobs,
    private readonly queue: JobQueue,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.queue.register<RecoverJob>({ name: RECOVER_QUEUE, batchSize: 1, handler: (jobs) => jobs.map((job) => this.recoverJob(job)) });
  }

  async list(organizationId: string, endpointId: string, page: PageRequest, filter: DeliveryFilter): Promise<Page<MessageSummary>> {
    await this.webhooks.get(organizationId, endpointId);
    return this.messages.history(organizationId, endpointId, page, filter);
  }

  async get(organizationId: string, endpointId: string, messageId: string): Promise<DeliveryDetail> {
    await this.webhooks.get(organizationId, endpointId);
    const message = await this.findMessage(organizationId, endpointId, messageId);
    return { message, attempts: await this.messages.attempts(message.id) };
  }

  /** A final message queued again on a new job, with the same id; 409 while it is pending. */
  async redeliver(organizationId: string, endpointId: string, messageId: string): Promise<WebhookMessage> {
    const endpoint = await this.webhooks.get(organizationId, endpointId);
    const message = await this.findMessage(organizationId, endpointId, messageId);
    assertEnabled(endpoint, 'redelivering');
    const requeued = await this.requeue(message);
    if (!requeued) throw new DomainError('WEBHOOK_MESSAGE_PENDING', 'The message is still pending; only a finished one can be redelivered');
    this.deliveries.wake();
    return requeued;
  }

  /**
   * Queues a `webhook-recover` job that re-sends every failed or skipped message of the
   * endpoint created at or after `since`; answers at once.
   */
  async recover(organizationId: string, endpointId: string, since: Date): Promise<Date> {
    const endpoint = await this.webhooks.get(organizationId, endpointId);
    const now = Date.now();
    const days = this.config.webhooks.logRetentionDays;
    // Recover goes no further back than the delivery log keeps messages.
    if (since.getTime() > now || since.getTime() < now - days * 86_400_000) {
      const message = `since must be within the delivery log retention (the last ${days} days) and not in the future`;
      throw new DomainError('VALIDATION_FAILED', message, [{ path: 'since', message }]);
    }
    assertEnabled(endpoint, 'recovering');
    const job: RecoverJob = { endpointId: endpoint.id, since: since.toISOString() };
    await this.queue.send(RECOVER_QUEUE, job, RECOVER_JOB_OPTIONS);
    this.queue.wake(RECOVER_QUEUE);
    return since;
  }

  /**
   * A `webhook.test` event to this endpoint only (not through the outbox), queued like any
   * message, and its first attempt if it comes within 15 s. Not sent from this request: a
   * message running without a live job would be queued again by the reconciler after 2 s.
   */
  async test(organizationId: string, endpointId: string): Promise<TestDelivery> {
    const endpoint = await this.webhooks.get(organizationId, endpointId);
    assertEnabled(endpoint, 'testing');
    const message = await this.enqueueTest(endpoint);
    this.deliveries.wake();
    return { messageId: message.id, attempt: await this.firstAttempt(message.id) };
  }

  private async findMessage(organizationId: string, endpointId: string, messageId: string): Promise<WebhookMessage> {
    const message = await this.messages.find(organizationId, endpointId, messageId);
    if (!message) throw new DomainError('WEBHOOK_MESSAGE_NOT_FOUND', 'No such message in the delivery log of this webhook');
    return message;
  }

  /** Back to `queued` on a new job, in one transaction; null when the message is not final. */
  @Transactional()
  private async requeue(message: Pick<MessageSummary, 'id'>): Promise<WebhookMessage | null> {
    const requeued = await this.messages.requeue(message.id, randomUUID());
    if (requeued) await this.deliveries.send(requeued, DELIVERY_JOB_OPTIONS);
    return requeued;
  }

  @Transactional()
  private async requeuePage(messages: MessageSummary[]): Promise<void> {
    for (const message of messages) await this.requeue(message);
  }

  @Transactional()
  private async enqueueTest(endpoint: WebhookEndpoint): Promise<WebhookMessage> {
    const now = new Date();
    const message: WebhookMessage = {
      id: timeOrderedId(),
      organizationId: endpoint.organizationId,
      endpointId: endpoint.id,
      type: 'webhook.test',
      payload: messagePayload('webhook.test', { endpointId: endpoint.id }, now),
      status: 'queued',
      attempts: 0,
      jobId: randomUUID(),
      error: null,
      nextAttemptAt: null,
      createdAt: now,
      finishedAt: null,
    };
    await this.deliveries.enqueue({ record: message, sendOptions: DELIVERY_JOB_OPTIONS });
    return message;
  }

  private async firstAttempt(messageId: string): Promise<DeliveryAttempt | null> {
    const deadline = Date.now() + TEST_WAIT_MS;
    for (;;) {
      const [attempt] = await this.messages.attempts(messageId);
      if (attempt) return attempt;
      if (Date.now() >= deadline) return null;
      await sleep(TEST_POLL_MS);
    }
  }

  private async recoverJob(job: Job<RecoverJob>): Promise<JobResult> {
    try {
      await this.resend(job.data.endpointId, new Date(job.data.since), job.signal);
      return { id: job.id, status: 'completed' };
    } catch (error) {
      this.logger.warn(`Recover of ${job.data.endpointId} interrupted: ${(error as Error).message}`);
      return { id: job.id, status: 'failed', output: { message: (error as Error).message } };
    }
  }

  /**
   * Pages through the failed and skipped messages, each page requeued with its jobs in one
   * transaction. Safe to run again (a retried job): requeue moves only final messages.
   */
  private async resend(endpointId: string, since: Date, lease: AbortSignal): Promise<void> {
    let after: MessageSummary | undefined;
    for (;;) {
      if (lease.aborted) throw new Error('The lease ran out');
      const page = await this.messages.failedSince(endpointId, since, RECOVER_PAGE, after);
      if (page.length) {
        await this.requeuePage(page);
        this.deliveries.wake();
      }
      if (page.length < RECOVER_PAGE) return;
      after = page[page.length - 1];
    }
  }
}

/** Nothing is sent to a disabled endpoint: it would only be recorded as skipped. */
function assertEnabled(endpoint: WebhookEndpoint, doing: string): void {
  if (!endpoint.enabled)
    throw new DomainError('WEBHOOK_DISABLED', `The webhook is disabled: enable it (PATCH enabled: true) before ${doing}`);
}
