import { randomUUID } from 'node:crypto';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { AppConfig } from '../../../config/app-config';
import { later, RunResult, RunSignals } from '../../../queue/durable-jobs';
import { EventOutbox } from '../../../shared/events/event-outbox';
import { Coalescer } from '../../../shared/batching/coalescer';
import { Failure } from '../../../shared/jobs/outcome';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { Metrics } from '../../../shared/metrics/metrics';
import { WebhookEndpoint } from '../domain/endpoint';
import { DeliveryAttempt, WebhookMessage } from '../domain/message';
import { nextAttemptDelay, parseRetryAfter } from '../domain/retry-schedule';
import { signatureHeader } from '../../../shared/crypto/standard-webhooks';
import { storableText } from '../../../shared/json/storable';
import { EndpointRepository, MessageRepository, StartedDelivery } from '../domain/webhook.repository';
import { DeliveryJobs } from './delivery-jobs';
import { EndpointSlots } from './endpoint-slots';

const REQUEST_TIMEOUT_MS = 15_000;
/** The response body kept in the delivery log. */
const LOGGED_BODY_BYTES = 4096;
const MAX_RESPONSE_BYTES = 1024 * 1024;
const DAY_MS = 86_400_000;
const USER_AGENT = 'Platform-Webhooks/1';

/**
 * The worker side of webhook deliveries: one attempt per job. Signs the stored body (Standard
 * Webhooks v1) with every secret still valid, posts it through the SSRF-guarded client
 * without following redirects, logs the attempt, and then either records the outcome or puts
 * the message on a new job at its next retry time.
 */
@Injectable()
export class WebhookSender implements OnModuleInit {
  private readonly slots = new EndpointSlots();
  private readonly attempts: Counter<'type' | 'outcome'>;
  /** Attempts logged in the same turn are written with one statement. */
  private readonly attemptLog: Coalescer<DeliveryAttempt, undefined>;
  private readonly lag: Histogram<'type'>;
  private readonly disabled: Counter<'reason'>;

  constructor(
    private readonly deliveries: DeliveryJobs,
    private readonly messages: MessageRepository,
    private readonly endpoints: EndpointRepository,
    private readonly outbox: EventOutbox,
    private readonly http: OutboundHttp,
    private readonly config: AppConfig,
    metrics: Metrics,
  ) {
    this.attemptLog = new Coalescer(async (attempts) => {
      await this.messages.addAttempts(attempts);
      return attempts.map(() => undefined);
    });
    this.attempts = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Delivery attempts by event type and outcome (succeeded: a 2xx; failed: anything else)',
      labelNames: ['type', 'outcome'],
      registers: [metrics.registry],
    });
    this.lag = new Histogram({
      name: 'webhook_delivery_lag_seconds',
      help: 'Time from an event to its successful delivery, by event type',
      labelNames: ['type'],
      buckets: [0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600, 86_400],
      registers: [metrics.registry],
    });
    this.disabled = new Counter({
      name: 'webhook_endpoints_disabled_total',
      help: 'Endpoints this process disabled on its own (gone: the receiver answered 410; failing: every delivery failed for WEBHOOK_DISABLE_AFTER_DAYS)',
      labelNames: ['reason'],
      registers: [metrics.registry],
    });
    // Both series from the start, so increase() sees the first disable too.
    for (const reason of ['gone', 'failing']) this.disabled.inc({ reason }, 0);
    const pending = () => this.messages.pendingByState();
    new Gauge({
      name: 'webhook_messages_pending',
      help: 'Webhook messages not yet delivered, by state (due: waiting for a worker; retry: waiting for a later attempt; running)',
      labelNames: ['state'],
      registers: [metrics.registry],
      async collect() {
        const counts = await pending().catch(() => null);
        if (counts) for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
      },
    });
  }

  onModuleInit(): void {
    this.deliveries.work((started, signals) => this.deliver(started, signals));
  }

  async deliver({ message, endpoint }: StartedDelivery, { lease }: RunSignals): Promise<RunResult> {
    if (!endpoint.enabled) return { status: 'canceled', error: { code: 'ENDPOINT_DISABLED', message: 'The endpoint is disabled' } };
    const release = await this.slots.acquire(endpoint.id);
    let attempt: Awaited<ReturnType<WebhookSender['post']>>;
    try {
      attempt = await this.post(message, endpoint, lease);
    } finally {
      release();
    }
    this.slots.record(endpoint.id, attempt.statusCode !== null);
    await this.attemptLog.add(attempt);
    const delivered = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    this.attempts.inc({ type: message.type, outcome: delivered ? 'succeeded' : 'failed' });
    if (delivered) {
      this.lag.observe({ type: message.type }, (Date.now() - message.createdAt.getTime()) / 1000);
      if (endpoint.failingSince) await this.recovered(endpoint);
      return { status: 'succeeded', output: null };
    }
    const error: Failure = {
      code: 'DELIVERY_FAILED',
      message: attempt.statusCode !== null ? `The receiver answered ${attempt.statusCode}` : (attempt.error ?? 'The request failed'),
    };
    if (attempt.statusCode === 410) {
      await this.disable(endpoint, 'gone', 'The receiver answered 410 Gone');
      return { status: 'failed', error };
    }
    const failingSince = await this.endpoints.markFailing(endpoint.id);
    const { disableAfterDays } = this.config.webhooks;
    if (failingSince && Date.now() - failingSince.getTime() >= disableAfterDays * DAY_MS) {
      await this.disable(endpoint, 'failing', `Every delivery failed for ${disableAfterDays} days`);
      return { status: 'failed', error };
    }
    const delay = nextAttemptDelay(message.attempts, attempt.retryAfterMs);
    if (delay === null) return { status: 'failed', error };
    return later(new Date(Date.now() + delay), error);
  }

  private async post(
    message: WebhookMessage,
    endpoint: WebhookEndpoint,
    lease: AbortSignal,
  ): Promise<DeliveryAttempt & { retryAfterMs: number | null }> {
    const attemptedAt = new Date();
    const timestamp = Math.floor(attemptedAt.getTime() / 1000);
    const began = performance.now();
    const record = (fields: Partial<DeliveryAttempt> & { retryAfterMs?: number | null }) => ({
      id: randomUUID(),
      messageId: message.id,
      attemptedAt,
      statusCode: null,
      responseBody: null,
      error: null,
      retryAfterMs: null,
      ...fields,
      latencyMs: Math.round(performance.now() - began),
    });
    try {
      const response = await this.http.request({
        method: 'POST',
        url: endpoint.url,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': message.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(endpoint.signingSecrets(attemptedAt), message.id, timestamp, message.payload),
        },
        body: message.payload,
        timeoutMs: REQUEST_TIMEOUT_MS,
        maxRedirects: 0,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        keepAlive: true,
        signal: lease,
      });
      return record({
        statusCode: response.status,
        // As the delivery log can hold it: a NUL in text is refused by PostgreSQL.
        responseBody: storableText(response.body.subarray(0, LOGGED_BODY_BYTES).toString('utf8')),
        retryAfterMs: parseRetryAfter(response.headers['retry-after'], new Date()),
      });
    } catch (error) {
      if (error instanceof OutboundError) return record({ error: `${error.code}: ${error.message}` });
      throw error;
    }
  }

  /**
   * The first success after failures: the endpoint's messages waiting for a later retry are
   * sent now instead of at their scheduled times (minutes to hours after an outage).
   */
  private async recovered(endpoint: WebhookEndpoint): Promise<void> {
    if ((await this.hurryRetries(endpoint)) > 0) this.deliveries.wake();
  }

  @Transactional()
  private async hurryRetries(endpoint: WebhookEndpoint): Promise<number> {
    if (!(await this.endpoints.markHealthy(endpoint.id))) return 0;
    return this.deliveries.startNow(await this.messages.retryNow(endpoint.id));
  }

  /** Disables the endpoint and tells the organization's endpoints, in one transaction. */
  private async disable(endpoint: WebhookEndpoint, cause: 'gone' | 'failing', reason: string): Promise<void> {
    const disabled = await this.disableInTransaction(endpoint, reason);
    if (!disabled) return;
    this.disabled.inc({ reason: cause });
    this.outbox.committed();
  }

  @Transactional()
  private async disableInTransaction(endpoint: WebhookEndpoint, reason: string): Promise<boolean> {
    if (!(await this.endpoints.disable(endpoint.id, reason))) return false;
    await this.outbox.publish([
      {
        organizationId: endpoint.organizationId,
        type: 'webhook.endpoint.disabled',
        data: { endpointId: endpoint.id, url: endpoint.url, reason },
      },
    ]);
    return true;
  }
}
