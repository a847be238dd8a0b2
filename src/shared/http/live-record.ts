import { BeforeApplicationShutdown, Injectable, Optional } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfig } from '../../config/app-config';
import { untilAborted } from '../async/until-aborted';
import { credentialCheckOf } from '../auth/credential-check';
import { DomainError } from '../errors/domain-error';
import { envelope } from '../errors/error-envelope';
import { Failure } from '../jobs/outcome';

/** A heartbeat comment this often keeps proxies from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000;
/**
 * Streams one organization may hold open on one instance: each holds a connection and reads
 * its record at every change, so one organization's streams cannot take the instance's database.
 */
export const MAX_STREAMS_PER_ORGANIZATION = 100;
/** How often an open stream checks again that its credential holds, as the auth guard checks it. */
export const CREDENTIAL_CHECK_MS = 1000;
/** STREAM_MAX_SECONDS' default: a stream ends after this long, and its client opens it again. */
export const STREAM_MAX_SECONDS = 3600;
/** A `Last-Event-ID` longer than this is not one of ours: the stream starts afresh. */
const MAX_EVENT_ID = 8192;

/** OpenAPI of a live stream's `Last-Event-ID` and its 200. */
export const LAST_EVENT_ID_DOC = {
  name: 'Last-Event-ID',
  required: false,
  description: 'The id of the last event received: a reconnecting client gets what changed since, without the `state` event',
};
/** The 200 of a live stream: its own media type (its errors stay JSON envelopes). */
export const LIVE_STREAM_DOC = {
  description:
    'text/event-stream: `state` (the whole record) first, then an event per transition, each with an `id`; a `: heartbeat` comment every 15 s; ' +
    'the server closes the stream after the final state. It closes it sooner after `event: error` (the error envelope: the key was revoked, ' +
    'the user disabled, the token expired; checked every second) or `event: reconnect` (the stream reached STREAM_MAX_SECONDS: open it ' +
    'again with `Last-Event-ID`)',
  content: { 'text/event-stream': { schema: { type: 'string' } } },
};

/**
 * One part of a record that moves on its own (a run, each of its steps). A record may gain
 * parts as it goes (an execution's turns) but never lose one, and its last part stays last.
 */
export interface LivePart {
  /**
   * Changes with every transition of the part (its status and attempts, say), short and made
   * of `[0-9a-z]`: the event id is the parts' versions joined with dots.
   */
  version: string;
  /** The SSE event name of its transitions (`run`, `step`). */
  event: string;
  data: object;
}

/** A record as a live stream shows it. */
export interface LiveView {
  /** In the order their events go out when several changed at once (the record itself last). */
  parts: LivePart[];
  /** The data of the first event, `state`. */
  state: object;
  /** Final: the stream ends after this view. */
  final: boolean;
}

export interface LiveSource {
  /** Whose record it is: streams are counted per organization. */
  organizationId: string;
  /** The record as it stands (throws once it is gone: the stream ends). */
  read(): Promise<LiveView>;
  /** `check` at once, when the record changed (in any process) and on a short poll, until non-null or `timeoutMs`. */
  watch<T>(timeoutMs: number, check: () => Promise<T | null>): Promise<T | null>;
  /**
   * Events that are not part of the record (a model's text as it streams), written as they come,
   * without an id; answers the function that stops them.
   */
  follow?(emit: (event: string, data: object) => void): () => void;
}

/**
 * Live streams of records: each streams a record's transitions as Server-Sent Events, from
 * `first` (the record read when the request came, after its access checks) until it is final.
 * On shutdown every stream ends (at its next read: a signal or its poll), so open streams do not hold
 * the process; their clients reconnect elsewhere with their `Last-Event-ID`.
 *
 * A stream is a request that lasts: every CREDENTIAL_CHECK_MS it runs the auth guard's check of
 * its credential again (credentialCheckOf), and once that refuses (a revoked key, a disabled
 * user, an expired token) it writes `event: error` with the refusal's envelope and closes, as
 * the next request would be refused. After `maxSeconds` (STREAM_MAX_SECONDS) it writes
 * `event: reconnect` and closes, so no stream outlives what it was opened with for long and
 * its client opens it again (with its `Last-Event-ID`, through the guard).
 *
 * The stream keeps no log: it diffs each read of the record against what the client has
 * seen, part by part, and every event's id encodes the version of each part after it. A
 * client that reconnects with `Last-Event-ID` gets the parts that moved since, without a gap
 * in the state and without a repeat; a new client gets the whole `state` first. What this
 * gives up against a durable log: transitions that follow each other between two reads of
 * the record (a step that starts and ends within a few ms, or while the client is away) come
 * as one event with the latest state of the part, and parts that moved at once come in the
 * order of `parts`, not of their commits.
 */
@Injectable()
export class LiveStreams implements BeforeApplicationShutdown {
  maxPerOrganization = MAX_STREAMS_PER_ORGANIZATION;
  credentialCheckMs = CREDENTIAL_CHECK_MS;
  maxSeconds: number;
  private stopping = false;
  /** Streams open per organization. */
  private readonly open = new Map<string, number>();

  constructor(@Optional() config?: AppConfig) {
    this.maxSeconds = config?.streams.maxSeconds ?? STREAM_MAX_SECONDS;
  }

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  /** RATE_LIMIT_EXCEEDED (before anything is streamed) when the organization holds its most streams already. */
  async stream(req: Request, res: Response, first: LiveView, source: LiveSource, heartbeatMs = HEARTBEAT_MS): Promise<void> {
    const { organizationId } = source;
    const held = this.open.get(organizationId) ?? 0;
    if (held >= this.maxPerOrganization) {
      throw new DomainError(
        'RATE_LIMIT_EXCEEDED',
        `Your organization has ${this.maxPerOrganization} live streams open on this instance; close one first`,
        undefined,
        { 'Retry-After': String(heartbeatMs / 1000) },
      );
    }
    this.open.set(organizationId, held + 1);
    try {
      await this.follow(req, res, first, source, heartbeatMs);
    } finally {
      const left = this.open.get(organizationId)! - 1;
      if (left) this.open.set(organizationId, left);
      else this.open.delete(organizationId);
    }
  }

  private async follow(req: Request, res: Response, first: LiveView, source: LiveSource, heartbeatMs: number): Promise<void> {
    // Aborted (with a StreamCut) when the stream is to end before its record is final.
    const cut = new AbortController();
    const end = (reason: StreamCut) => cut.abort(reason);
    res.on('close', () => end(new StreamCut('closed')));
    const over = () => cut.signal.aborted || this.stopping;
    const lifetime = setTimeout(() => end(new StreamCut('max_age')), this.maxSeconds * 1000);
    const checking = this.checkCredential(req, over, end);
    res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();

    let seen = seenVersions(req.get('last-event-id'), first);
    const stopFollowing = source.follow?.((event, data) => {
      if (!over()) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    });
    if (seen) {
      seen = send(res, first, seen);
    } else {
      seen = first.parts.map((p) => p.version);
      write(res, 'state', seen.join('.'), first.state);
    }
    let view = first;
    try {
      while (!view.final && !over()) {
        const known = seen;
        const watched = source.watch(heartbeatMs, async () => {
          if (over()) return view;
          const read = await source.read();
          const now = aligned(known, read.parts.length);
          return read.parts.some((p, i) => p.version !== now[i]) ? read : null;
        });
        // A cut ends the wait at once; the watch left behind ends at its next check (over()).
        const next = await untilAborted(watched, cut.signal);
        if (next) seen = send(res, (view = next), seen);
        else res.write(': heartbeat\n\n');
      }
    } catch {
      // Cut, or the database went away, or the record: the client reconnects with its Last-Event-ID.
    }
    clearTimeout(lifetime);
    clearInterval(checking);
    const reason: unknown = cut.signal.reason;
    if (reason instanceof StreamCut && !view.final) {
      if (reason.refusal) {
        const { code, message, details } = reason.refusal;
        res.write(`event: error\ndata: ${JSON.stringify(envelope(code, message, details))}\n\n`);
      } else if (reason.why === 'max_age') res.write('event: reconnect\ndata: {}\n\n');
    }
    stopFollowing?.();
    res.end();
  }

  /**
   * Runs the auth guard's check of the request's credential every credentialCheckMs (one at a
   * time) and cuts the stream with its refusal. A failure that is not a refusal (the database
   * away) is no answer: the next check tries again. Answers the timer (none without a check).
   */
  private checkCredential(req: Request, over: () => boolean, end: (reason: StreamCut) => void): NodeJS.Timeout | undefined {
    const check = credentialCheckOf(req);
    if (!check) return undefined;
    let running = false;
    return setInterval(() => {
      if (running || over()) return;
      running = true;
      void check()
        .catch((error: unknown) => {
          if (error instanceof DomainError) end(new StreamCut('refused', error));
        })
        .finally(() => (running = false));
    }, this.credentialCheckMs);
  }
}

/** Why a stream ends before its record is final: the client went, its credential was refused, or it lasted STREAM_MAX_SECONDS. */
class StreamCut extends Error {
  constructor(
    readonly why: 'closed' | 'refused' | 'max_age',
    readonly refusal?: DomainError,
  ) {
    super(`stream ${why}`);
  }
}

/** The parts' versions the client has seen, from its `Last-Event-ID`; null when it has none for this record. */
function seenVersions(lastEventId: string | undefined, view: LiveView): string[] | null {
  if (!lastEventId || lastEventId.length > MAX_EVENT_ID) return null;
  const versions = lastEventId.split('.');
  if (versions.length > view.parts.length || !versions.every((v) => /^[0-9a-z]*$/.test(v))) return null;
  return aligned(versions, view.parts.length);
}

/** Versions seen of a record that has gained parts since: the new parts (before the last) are unseen. */
function aligned(seen: string[], length: number): string[] {
  if (seen.length >= length) return seen;
  return [...seen.slice(0, -1), ...Array<string>(length - seen.length).fill(''), ...seen.slice(-1)];
}

/** One event per part whose version differs from `seen`, each with the versions after it; answers them. */
function send(res: Response, view: LiveView, seen: string[]): string[] {
  const now = [...aligned(seen, view.parts.length)];
  view.parts.forEach((part, i) => {
    if (part.version === now[i]) return;
    now[i] = part.version;
    write(res, part.event, now.join('.'), part.data);
  });
  return now;
}

function write(res: Response, event: string, id: string, data: object): void {
  res.write(`event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** A part's version: its status (one character: its index in `statuses`) and its attempts. */
export function version<S extends string>(statuses: readonly S[], status: S, attempts: number): string {
  return `${statuses.indexOf(status).toString(36)}${attempts}`;
}

/** The size of an output in bytes of JSON, once there is one (`has`). */
export function byteSize(has: boolean, output: unknown): number | null {
  return has ? Buffer.byteLength(JSON.stringify(output ?? null)) : null;
}

/** An error's code and message. */
export function briefError(error: Failure | null): Failure | null {
  return error ? { code: error.code, message: error.message } : null;
}
