import { randomUUID } from 'node:crypto';
import { DomainError } from '../../../shared/errors/domain-error';
import { isEventPattern, matchesPattern } from './event-types';
import { liveSecrets, rotated, RotatingSecret } from '../../../shared/crypto/rotating-secrets';
import { newSigningSecret } from '../../../shared/crypto/standard-webhooks';

/** A signing secret; one that is being rotated out signs until `expiresAt`. */
export type SigningSecret = RotatingSecret;

export interface EndpointProps {
  id: string;
  organizationId: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  enabled: boolean;
  /** The current secret first; at most one older one during a rotation's grace window. */
  secrets: SigningSecret[];
  /** Why it was disabled by the service (410, failing for days); null when enabled or disabled by a user. */
  disabledReason: string | null;
  /** Since when every delivery failed; null after a success. */
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * `perOrganization` bounds the fan-out: every event is written once per endpoint in the
 * transaction of the change that raised it, so one organization cannot make that unbounded.
 */
export const ENDPOINT_LIMITS = {
  perOrganization: 20,
  eventTypes: 64,
  descriptionLength: 500,
  urlLength: 2048,
  graceSeconds: { max: 7 * 86_400 },
};

/** What the outbox reads of an endpoint: which events it wants and whether it takes them now (no secrets). */
export interface EndpointSubscription {
  id: string;
  organizationId: string;
  eventTypes: readonly string[];
  enabled: boolean;
}

export function subscribesTo(subscription: Pick<EndpointSubscription, 'eventTypes'>, type: string): boolean {
  return subscription.eventTypes.some((pattern) => matchesPattern(pattern, type));
}

/** Where an organization's events go: a receiver URL, the event types it wants, and how deliveries are signed. */
export class WebhookEndpoint {
  private constructor(private props: EndpointProps) {}

  static create(input: {
    organizationId: string;
    url: string;
    description?: string | null;
    eventTypes: string[];
    enabled?: boolean;
  }): WebhookEndpoint {
    assertEventTypes(input.eventTypes);
    const now = new Date();
    return new WebhookEndpoint({
      id: randomUUID(),
      organizationId: input.organizationId,
      url: input.url,
      description: input.description ?? null,
      eventTypes: [...new Set(input.eventTypes)],
      enabled: input.enabled ?? true,
      secrets: [{ secret: newSigningSecret(), expiresAt: null }],
      disabledReason: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    });
  }

  static rehydrate(props: EndpointProps): WebhookEndpoint {
    return new WebhookEndpoint({ ...props, secrets: props.secrets.map((s) => ({ ...s })) });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get url() {
    return this.props.url;
  }
  get description() {
    return this.props.description;
  }
  get eventTypes(): readonly string[] {
    return this.props.eventTypes;
  }
  get enabled() {
    return this.props.enabled;
  }
  get disabledReason() {
    return this.props.disabledReason;
  }
  get failingSince() {
    return this.props.failingSince;
  }
  get createdAt() {
    return this.props.createdAt;
  }
  get updatedAt() {
    return this.props.updatedAt;
  }
  /** Every secret, for storage (sealed) only. */
  get secrets(): readonly SigningSecret[] {
    return this.props.secrets;
  }
  /** The secret deliveries are signed with from now on. */
  get currentSecret(): string {
    return this.props.secrets[0].secret;
  }

  /** The secrets that sign a delivery made at `now`: the current one, and an older one still in its grace window. */
  signingSecrets(now: Date): string[] {
    return liveSecrets(this.props.secrets, now);
  }

  wants(type: string): boolean {
    return subscribesTo(this.props, type);
  }

  update(patch: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean }): void {
    if (patch.eventTypes) assertEventTypes(patch.eventTypes);
    const next = { ...this.props };
    if (patch.url !== undefined) next.url = patch.url;
    if (patch.description !== undefined) next.description = patch.description;
    if (patch.eventTypes) next.eventTypes = [...new Set(patch.eventTypes)];
    if (patch.enabled !== undefined) {
      next.enabled = patch.enabled;
      // Enabled again by a user: failures start counting afresh.
      if (patch.enabled) Object.assign(next, { disabledReason: null, failingSince: null });
    }
    this.props = { ...next, updatedAt: new Date() };
  }

  /**
   * A new current secret; the old one keeps signing for `graceSeconds` (0: stops at once),
   * so receivers can switch without missing a delivery. Answers the new secret.
   */
  rotateSecret(graceSeconds: number, now = new Date()): string {
    const secret = newSigningSecret();
    this.props = { ...this.props, secrets: rotated(this.props.secrets, secret, graceSeconds, now), updatedAt: now };
    return secret;
  }
}

function assertEventTypes(eventTypes: string[]): void {
  const unknown = eventTypes.filter((t) => !isEventPattern(t));
  if (!eventTypes.length || unknown.length) {
    const message = eventTypes.length
      ? `Unknown event types: ${unknown.join(', ')} (see GET /api/webhook-event-types)`
      : 'eventTypes needs at least one event type';
    throw new DomainError('VALIDATION_FAILED', message, [{ path: 'eventTypes', message }]);
  }
}
