/** Something that happened in an organization, as subscribers (webhooks) receive it. */
export interface PlatformEvent {
  organizationId: string;
  /** From the event catalog, e.g. `agent.execution.succeeded`. */
  type: string;
  /** The resource as its GET shows it. */
  data: Record<string, unknown>;
}

/**
 * Port: where events go. `publish` runs inside the transaction of the change that caused them
 * and writes what it needs there (an outbox), so a committed change always has its events and
 * a rolled-back one never does. The webhooks module provides it.
 */
export abstract class EventOutbox {
  abstract publish(events: PlatformEvent[]): Promise<void>;
  /** After the transaction that published committed: a chance to wake whoever delivers. */
  abstract committed(): void;
}
