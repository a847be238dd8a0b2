import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { DomainError } from '../../../shared/errors/domain-error';
import { OutboundHttp } from '../../../shared/outbound/outbound-http';
import { OutboundError, OutboundErrorCode } from '../../../shared/outbound/outbound-http.types';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { ENDPOINT_LIMITS, WebhookEndpoint } from '../domain/endpoint';
import { EVENT_TYPES, EventType } from '../domain/event-types';
import { EndpointRepository } from '../domain/webhook.repository';

export const WEBHOOKS_FEATURE = 'webhooks';
/** How long a rotated-out secret keeps signing when the caller does not say: a day. */
export const DEFAULT_GRACE_SECONDS = 86_400;

export interface EndpointDefinition {
  url: string;
  description?: string | null;
  eventTypes: string[];
  enabled?: boolean;
}

export interface EndpointChanges {
  url?: string;
  description?: string | null;
  eventTypes?: string[];
  enabled?: boolean;
}

/** A new endpoint with its signing secret: the only answer that ever shows the secret. */
export interface CreatedEndpoint {
  endpoint: WebhookEndpoint;
  secret: string;
}

export interface RotatedSecret {
  secret: string;
  /** When the previous secret stops signing (the rotation's time when there is no grace). */
  previousSecretExpiresAt: Date;
}

export function webhookNotFound(): DomainError {
  return new DomainError('WEBHOOK_NOT_FOUND', 'No such webhook');
}

/** What the SSRF guard's check can refuse a URL for; anything else it throws is a bug and propagates. */
const REFUSALS: ReadonlySet<OutboundErrorCode> = new Set([
  'URL_INVALID',
  'SCHEME_NOT_ALLOWED',
  'ADDRESS_NOT_ALLOWED',
  'DNS_FAILED',
  'TIMEOUT',
]);

/** An organization's webhook endpoints (Team tier and up). Every use case checks the tier, reads too. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly endpoints: EndpointRepository,
    private readonly subscriptions: SubscriptionService,
    private readonly outbound: OutboundHttp,
    private readonly audit: AuditTrail,
  ) {}

  async create(organizationId: string, definition: EndpointDefinition): Promise<CreatedEndpoint> {
    await this.assertFeature(organizationId);
    const endpoint = WebhookEndpoint.create({ organizationId, ...definition });
    await this.assertAllowedUrl(endpoint.url);
    await this.insertWithinLimit(endpoint);
    return { endpoint, secret: endpoint.currentSecret };
  }

  @Transactional()
  private async insertWithinLimit(endpoint: WebhookEndpoint): Promise<void> {
    const limit = ENDPOINT_LIMITS.perOrganization;
    if ((await this.endpoints.countForCreate(endpoint.organizationId)) >= limit) {
      throw new DomainError('WEBHOOK_LIMIT_REACHED', `An organization may have ${limit} webhook endpoints; delete one first`);
    }
    await this.endpoints.insert(endpoint);
    await this.audit.record({ ...audited(endpoint, 'webhook_endpoint.created'), changes: { after: described(endpoint) } });
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<WebhookEndpoint>> {
    await this.assertFeature(organizationId);
    return this.endpoints.list(organizationId, page);
  }

  async get(organizationId: string, id: string): Promise<WebhookEndpoint> {
    await this.assertFeature(organizationId);
    return this.find(organizationId, id);
  }

  /** The URL is checked before the transaction opens: a slow DNS answer holds no connection. */
  async update(organizationId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpoint> {
    await this.assertFeature(organizationId);
    if (changes.url !== undefined) await this.assertAllowedUrl(changes.url);
    return this.applyChanges(organizationId, id, changes);
  }

  @Transactional()
  async delete(organizationId: string, id: string): Promise<void> {
    await this.assertFeature(organizationId);
    const endpoint = await this.find(organizationId, id, { forUpdate: true });
    if (!(await this.endpoints.delete(organizationId, id))) throw webhookNotFound();
    await this.audit.record({ ...audited(endpoint, 'webhook_endpoint.deleted'), changes: { before: described(endpoint) } });
  }

  /** A new signing secret; the previous one keeps signing for `graceSeconds` (0: stops now). */
  @Transactional()
  async rotateSecret(organizationId: string, id: string, graceSeconds = DEFAULT_GRACE_SECONDS): Promise<RotatedSecret> {
    await this.assertFeature(organizationId);
    const max = ENDPOINT_LIMITS.graceSeconds.max;
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > max) {
      const message = `graceSeconds must be an integer from 0 to ${max}`;
      throw new DomainError('VALIDATION_FAILED', message, [{ path: 'graceSeconds', message }]);
    }
    const endpoint = await this.find(organizationId, id, { forUpdate: true });
    const now = new Date();
    const secret = endpoint.rotateSecret(graceSeconds, now);
    await this.endpoints.update(endpoint);
    // The secret is never recorded; only how long the previous one keeps signing.
    await this.audit.record({ ...audited(endpoint, 'webhook_endpoint.secret_rotated'), changes: { after: { graceSeconds } } });
    return { secret, previousSecretExpiresAt: new Date(now.getTime() + graceSeconds * 1000) };
  }

  /** The catalog of event types an endpoint may subscribe to. */
  async eventTypes(organizationId: string): Promise<readonly EventType[]> {
    await this.assertFeature(organizationId);
    return EVENT_TYPES;
  }

  @Transactional()
  private async applyChanges(organizationId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpoint> {
    const endpoint = await this.find(organizationId, id, { forUpdate: true });
    const before = described(endpoint);
    endpoint.update(changes);
    await this.endpoints.update(endpoint);
    await this.audit.record({ ...audited(endpoint, 'webhook_endpoint.updated'), changes: changedFields(before, described(endpoint)) });
    return endpoint;
  }

  /** `forUpdate`: the row stays locked until the transaction ends, so a rotate, a PATCH and a disable never overwrite each other. */
  private async find(organizationId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<WebhookEndpoint> {
    const endpoint = await this.endpoints.find(organizationId, id, options);
    if (!endpoint) throw webhookNotFound();
    return endpoint;
  }

  private assertFeature(organizationId: string): Promise<void> {
    return this.subscriptions.assertFeature(organizationId, WEBHOOKS_FEATURE);
  }

  /** The SSRF guard's verdict on a URL saved now and called later (it checks again on every delivery). */
  private async assertAllowedUrl(url: string): Promise<void> {
    try {
      await this.outbound.check(url);
    } catch (error) {
      if (!(error instanceof OutboundError) || !REFUSALS.has(error.code)) throw error;
      const reason = error.code === 'TIMEOUT' ? 'The host could not be resolved in time' : error.message;
      throw new DomainError('VALIDATION_FAILED', `The webhook URL is not allowed: ${reason}`, [{ path: 'url', message: reason }]);
    }
  }
}

type EndpointAction =
  'webhook_endpoint.created' | 'webhook_endpoint.updated' | 'webhook_endpoint.secret_rotated' | 'webhook_endpoint.deleted';

/** An endpoint as the audit log names it: by its URL. */
function audited(endpoint: WebhookEndpoint, action: EndpointAction) {
  return { organizationId: endpoint.organizationId, action, target: { type: 'webhook_endpoint', id: endpoint.id, name: endpoint.url } };
}

/** An endpoint as the audit log shows it: what a user sets, never its signing secrets. */
function described(endpoint: WebhookEndpoint) {
  const { url, description, eventTypes, enabled } = endpoint;
  return { url, description, eventTypes: [...eventTypes], enabled };
}
