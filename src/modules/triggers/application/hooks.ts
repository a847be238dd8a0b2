import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { Counter } from 'prom-client';
import { AppConfig } from '../../../config/app-config';
import { withPerson } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { ExpressionFailure, ExpressionSandbox } from '../../../shared/expressions/expression-sandbox';
import { assertStorableText, depthExceeds, MAX_JSON_DEPTH } from '../../../shared/http/request-body';
import { Metrics } from '../../../shared/metrics/metrics';
import { clientKey, RateLimits } from '../../throttling/rate-limits';
import { isRunFinished, Run } from '../../runs/domain/run';
import { Trigger } from '../domain/trigger';
import { TriggerEvent, TriggerEventRepository, TriggerRepository } from '../domain/trigger.repository';
import { RunRepository } from '../../runs/domain/run.repository';
import { RunsService } from '../../runs/application/runs.service';
import { timeOrderedId } from '../../../shared/ids/time-ordered-id';

/** A request to a hook as it arrived. */
export interface HookRequest {
  /** Names lower-case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  query: Record<string, unknown>;
  /** Reads the body's exact bytes; called once the limits let the request in (over the size limit: 413). */
  readBody: () => Promise<Buffer>;
  /** The sender's address. */
  source: string;
}

/** What a request started: its event and run (the earlier ones for a repeated delivery). */
export interface HookAnswer {
  eventId: string;
  run: Run;
  duplicate: boolean;
  /** Whether the trigger answers once the run finished (`sync`), and waited for it. */
  waited: boolean;
}

/** What a trigger keeps of a request and gives its mapping: credentials left out. */
export interface StoredRequest {
  headers: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);
const MINUTE = 60;

export function triggerNotFound(): DomainError {
  return new DomainError('TRIGGER_NOT_FOUND', 'No such webhook trigger');
}

/**
 * The public side of inbound webhook triggers: `POST /api/hooks/:id` is limited per sender
 * address, routed by a database lookup (so any instance answers for every trigger, and a
 * restart loses nothing), its body read and authenticated on its raw bytes; only an
 * authenticated request counts against the trigger's limit and the organization's tier budget,
 * is mapped in the expression sandbox, and recorded with its run in one transaction before it
 * is answered (a repeated delivery is found there, by its dedupe key, and answered with the
 * earlier run).
 */
@Injectable()
export class Hooks {
  private readonly received: Counter<'outcome'>;

  constructor(
    private readonly config: AppConfig,
    private readonly triggers: TriggerRepository,
    private readonly events: TriggerEventRepository,
    private readonly runRows: RunRepository,
    private readonly runs: RunsService,
    private readonly sandbox: ExpressionSandbox,
    private readonly limits: RateLimits,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    metrics: Metrics,
  ) {
    this.received = new Counter({
      name: 'workflow_trigger_requests_total',
      help: 'Requests to inbound webhook triggers that were authenticated, by outcome (started, duplicate, refused)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
  }

  /**
   * Handles one request. Until the request proves who sent it, only its source address is
   * counted: a stranger's requests (a wrong signature, a guessed id) spend neither the
   * trigger's budget nor the organization's, and a refusal says nothing of the organization's
   * limits. `rateLimitHeaders` gets the organization's budget headers once it is authenticated.
   */
  async receive(triggerId: string, request: HookRequest, rateLimitHeaders: (headers: Record<string, string>) => void): Promise<HookAnswer> {
    const limited = this.config.rateLimitEnabled;
    const { perSourcePerMinute, perTriggerPerMinute } = this.config.triggers;
    if (limited) {
      const message = `A sender address may make ${perSourcePerMinute} requests per minute to webhook triggers`;
      await this.limits.count('hook', `hook:source:${clientKey(request.source)}`, perSourcePerMinute, MINUTE, message);
    }
    const live = isUUID(triggerId) ? await this.triggers.findLive(triggerId) : null;
    if (!live) throw triggerNotFound();
    const { trigger, currentVersion } = live;
    const rawBody = await request.readBody();
    const problem = trigger.authenticate({ headers: request.headers, rawBody });
    if (problem) throw new DomainError('UNAUTHORIZED', problem);
    if (limited) {
      const message = `The trigger accepts ${perTriggerPerMinute} requests per minute`;
      await this.limits.count('hook', `hook:trigger:${trigger.id}`, perTriggerPerMinute, MINUTE, message);
      const { headers, refused } = await this.limits.organization(trigger.organizationId);
      rateLimitHeaders(headers);
      if (refused) throw refused;
    }
    const stored = { headers: storedHeaders(request.headers), query: request.query, body: parseBody(request.headers, rawBody) };
    // A repeated delivery is told by the event's insert (its dedupe key is unique per trigger).
    const meta = { source: request.source, dedupeKey: trigger.dedupeKey(request.headers), replayOf: null };
    return this.fire(trigger, currentVersion, stored, meta);
  }

  /**
   * Maps the request to the run's input and records the event with its run in one
   * transaction; a request refused by the mapping or the workflow's inputSchema is recorded as
   * `refused` (without its dedupe key, so the sender's retry is taken once the trigger is fixed).
   */
  async fire(
    trigger: Trigger,
    currentVersion: number,
    request: StoredRequest,
    meta: { source: string; dedupeKey: string | null; replayOf: string | null },
    /** Who replays the event; none for a request from outside. */
    person?: string,
  ): Promise<HookAnswer> {
    const event: TriggerEvent = {
      id: timeOrderedId(),
      triggerId: trigger.id,
      organizationId: trigger.organizationId,
      createdAt: new Date(),
      status: 'started',
      runId: timeOrderedId(),
      error: null,
      ...meta,
      ...request,
    };
    try {
      const input = await this.map(trigger, request);
      const submitted = await this.txHost.withTransaction(async () => {
        if (!(await this.events.insert(event))) return null;
        return this.runs.enqueue(trigger.organizationId, {
          workflowId: trigger.workflowId,
          input,
          // The trigger's lookup found the workflow live: its version is all the run needs.
          version: trigger.workflowVersion ?? currentVersion,
          runId: event.runId!,
          triggeredBy: { type: 'webhook', id: trigger.id, eventId: event.id, ...withPerson(person) },
        });
      });
      // A repeated delivery: the trigger has an event with its dedupe key (an earlier one, or a concurrent one now committed).
      if (!submitted) return this.duplicate(trigger, (await this.events.findByDedupeKey(trigger.id, meta.dedupeKey!))!);
      const waited = trigger.responseMode === 'sync';
      const run = await this.runs.settle(submitted, waited ? trigger.waitSeconds : 0);
      this.received.inc({ outcome: 'started' });
      return { eventId: event.id, run, duplicate: false, waited };
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'VALIDATION_FAILED') throw error;
      await this.events.insert({ ...event, status: 'refused', runId: null, dedupeKey: null, error: error.message });
      this.received.inc({ outcome: 'refused' });
      throw error;
    }
  }

  private async map(trigger: Trigger, request: StoredRequest): Promise<unknown> {
    if (!trigger.mapping) return request.body;
    try {
      const options = { organizationId: trigger.organizationId, maxOutputBytes: this.config.http.bodyLimitBytes };
      return await this.sandbox.evaluate(trigger.mapping, request, options);
    } catch (error) {
      if (!(error instanceof ExpressionFailure)) throw error;
      throw new DomainError('VALIDATION_FAILED', `The trigger's mapping failed: ${error.message}`, [
        { path: 'mapping', message: error.message },
      ]);
    }
  }

  /** The earlier answer: its run as it is now (a sync trigger's output once it finished). */
  private async duplicate(trigger: Trigger, seen: TriggerEvent): Promise<HookAnswer> {
    const run = seen.runId ? await this.runRows.findById(seen.runId) : null;
    // The run of a recorded event is kept as long as its event, but a purge may part them.
    if (!run) throw new DomainError('TRIGGER_EVENT_NOT_FOUND', 'The run this request started earlier is no longer kept');
    this.received.inc({ outcome: 'duplicate' });
    return { eventId: seen.id, run, duplicate: true, waited: trigger.responseMode === 'sync' };
  }
}

/** The status a hook answers with: 200 once a `sync` trigger's run finished, 202 otherwise. */
export function hookStatus(answer: HookAnswer): 200 | 202 {
  return answer.waited && isRunFinished(answer.run) ? 200 : 202;
}

function storedHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name)));
}

/** JSON bodies parsed; any other type kept as text; none: null. */
function parseBody(headers: Record<string, string>, rawBody: Buffer): unknown {
  if (rawBody.length === 0) return null;
  const text = rawBody.toString('utf8');
  const type = (headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  let body: unknown = text;
  if (type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new DomainError('VALIDATION_FAILED', `The body is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (depthExceeds(body, MAX_JSON_DEPTH))
    throw new DomainError('VALIDATION_FAILED', `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  // Text PostgreSQL cannot store (a NUL, a lone surrogate) is refused here, naming where it is.
  assertStorableText(body, 'The body', 'the body');
  return body;
}
