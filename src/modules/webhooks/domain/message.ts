import { Failure } from '../../../shared/jobs/outcome';

/** queued and running show as `pending` in the API; the last three are final. */
export type MessageStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

/** One event for one endpoint. Its id is the `webhook-id` of every attempt, retry and redelivery. */
export interface WebhookMessage {
  id: string;
  organizationId: string;
  endpointId: string;
  type: string;
  /** The exact body sent and signed: `{"type","timestamp","data"}`. */
  payload: string;
  status: MessageStatus;
  attempts: number;
  jobId: string | null;
  error: Failure | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/**
 * A message without its payload: what the delivery log lists and a recover pages through. The
 * payload (the event's data, inputs included, so up to a few MiB) is read by a start, to send
 * it, and by one message's GET, never by a page of many.
 */
export type MessageSummary = Omit<WebhookMessage, 'payload'>;

/** One try at delivering a message, as the delivery log shows it. */
export interface DeliveryAttempt {
  id: string;
  messageId: string;
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  /** The first 4 KiB of the response body. */
  responseBody: string | null;
  error: string | null;
}

/** The body of a message: Standard Webhooks' `{ type, timestamp, data }`. */
export function messagePayload(type: string, data: Record<string, unknown>, at: Date): string {
  return JSON.stringify({ type, timestamp: at.toISOString(), data });
}
