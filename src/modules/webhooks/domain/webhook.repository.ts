import { KeysetPosition, Page, PageRequest } from '../../../shared/pagination/cursor';
import { JobRef } from '../../../shared/jobs/job-ref';
import { Failure, Outcome } from '../../../shared/jobs/outcome';
import { EndpointSubscription, WebhookEndpoint } from './endpoint';
import { DeliveryAttempt, MessageStatus, MessageSummary, WebhookMessage } from './message';

export abstract class EndpointRepository {
  abstract insert(endpoint: WebhookEndpoint): Promise<void>;
  /** The organization's endpoints, counted under a lock held until the transaction ends (one create at a time). */
  abstract countForCreate(organizationId: string): Promise<number>;
  abstract update(endpoint: WebhookEndpoint): Promise<void>;
  /** `forUpdate`: lock the row until the current transaction ends. */
  abstract find(organizationId: string, id: string, options?: { forUpdate?: boolean }): Promise<WebhookEndpoint | null>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<WebhookEndpoint>>;
  abstract delete(organizationId: string, id: string): Promise<boolean>;
  /** The endpoints with these ids, enabled or not (messages to a disabled one are kept as skipped). */
  abstract withIds(ids: string[]): Promise<WebhookEndpoint[]>;
  /** What the outbox needs of these organizations' endpoints: one light read per finishing batch. */
  abstract subscriptions(organizationIds: string[]): Promise<EndpointSubscription[]>;
  /** A delivery failed: `failingSince` is set if it was not; answers it. */
  abstract markFailing(id: string): Promise<Date | null>;
  /** A delivery succeeded: failures stop counting. True when the endpoint was failing until now. */
  abstract markHealthy(id: string): Promise<boolean>;
  /** Disables an enabled endpoint with the reason; true when it was enabled. */
  abstract disable(id: string, reason: string): Promise<boolean>;
}

/** A message a worker took up, with the endpoint it goes to. */
export interface StartedDelivery {
  message: WebhookMessage;
  endpoint: WebhookEndpoint;
}

export interface UnfinishedMessage {
  id: string;
  organizationId: string;
  jobId: string | null;
  attempts: number;
}

export interface DeliveryFilter {
  status?: 'pending' | Exclude<MessageStatus, 'queued' | 'running'>;
  since?: Date;
}

export abstract class MessageRepository {
  abstract insertMany(messages: WebhookMessage[]): Promise<void>;
  /** The durable-job core's view: one insert, guarded starts and finishes. */
  abstract insert(message: WebhookMessage): Promise<void>;
  abstract findById(id: string): Promise<WebhookMessage | null>;
  abstract find(organizationId: string, endpointId: string, id: string): Promise<WebhookMessage | null>;
  abstract start(jobs: JobRef[]): Promise<StartedDelivery[]>;
  /** `canceled` outcomes are recorded as `skipped`. */
  abstract finish(outcomes: Array<{ id: string; outcome: Outcome }>): Promise<Array<WebhookMessage | null>>;
  abstract unfinished(olderThanMs: number, limit: number): Promise<UnfinishedMessage[]>;
  abstract moveToJob(id: string, fromJobId: string | null, toJobId: string): Promise<boolean>;
  abstract abandon(id: string, jobId: string | null, error: Failure): Promise<WebhookMessage | null>;
  /** Back to `queued` on the job `toJobId` that starts at `at`, with the last error; null when it no longer runs on `fromJobId`. */
  abstract wait(id: string, fromJobId: string, toJobId: string, at: Date, error: Failure | null): Promise<WebhookMessage | null>;
  /** The endpoint's messages waiting for a later retry are due now; answers the jobs that carry them. */
  abstract retryNow(endpointId: string): Promise<string[]>;
  /** A final message queued again (redeliver, recover) on a new job; null when it is still pending. */
  abstract requeue(id: string, toJobId: string): Promise<WebhookMessage | null>;
  /**
   * Failed or skipped messages of the endpoint created at or after `since`, oldest first; after
   * `after` (the last of the previous page), so a page requeued and failed again is not read twice. Without payloads.
   */
  abstract failedSince(endpointId: string, since: Date, limit: number, after?: KeysetPosition): Promise<MessageSummary[]>;
  /** The endpoint's delivery log, newest first, without payloads. */
  abstract history(organizationId: string, endpointId: string, page: PageRequest, filter: DeliveryFilter): Promise<Page<MessageSummary>>;
  abstract addAttempts(attempts: DeliveryAttempt[]): Promise<void>;
  abstract attempts(messageId: string): Promise<DeliveryAttempt[]>;
  /** Pending messages by state: `due` (waiting for a worker), `retry` (waiting for a later attempt), `running`. */
  abstract pendingByState(): Promise<Record<'due' | 'retry' | 'running', number>>;
}
