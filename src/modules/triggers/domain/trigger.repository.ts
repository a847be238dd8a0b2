import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Trigger } from './trigger';

export type TriggerEventStatus = 'started' | 'refused';

/** A request a trigger accepted: what came (headers without credentials, query, body) and what it started. */
export interface TriggerEvent {
  id: string;
  triggerId: string;
  organizationId: string;
  /** When it was received. */
  createdAt: Date;
  /** The sender's address. */
  source: string;
  status: TriggerEventStatus;
  runId: string | null;
  dedupeKey: string | null;
  /** Why no run was started (`refused`). */
  error: string | null;
  /** The event this one replays. */
  replayOf: string | null;
  headers: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

export type TriggerEventSummary = Omit<TriggerEvent, 'headers' | 'query' | 'body'>;

export abstract class TriggerRepository {
  abstract insert(trigger: Trigger): Promise<void>;
  abstract update(trigger: Trigger): Promise<void>;
  abstract find(organizationId: string, workflowId: string, id: string): Promise<Trigger | null>;
  /**
   * What a hook request is routed by (one query): the enabled trigger with this id whose
   * workflow is not deleted, and that workflow's current version.
   */
  abstract findLive(id: string): Promise<{ trigger: Trigger; currentVersion: number } | null>;
  abstract list(organizationId: string, workflowId: string, page: PageRequest): Promise<Page<Trigger>>;
  /** The workflow's triggers, counted under a lock held until the transaction ends (one create at a time). */
  abstract countForCreate(workflowId: string): Promise<number>;
  abstract delete(organizationId: string, workflowId: string, id: string): Promise<boolean>;
  abstract deleteOfWorkflow(organizationId: string, workflowId: string): Promise<void>;
}

export abstract class TriggerEventRepository {
  /**
   * Records the event, unless the trigger already has one with its dedupe key (false then;
   * a concurrent insert of the same key is waited for).
   */
  abstract insert(event: TriggerEvent): Promise<boolean>;
  abstract findByDedupeKey(triggerId: string, dedupeKey: string): Promise<TriggerEvent | null>;
  abstract find(organizationId: string, triggerId: string, id: string): Promise<TriggerEvent | null>;
  /** Newest first, without the requests' contents. */
  abstract list(organizationId: string, triggerId: string, page: PageRequest): Promise<Page<TriggerEventSummary>>;
}
