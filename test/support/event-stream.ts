/** One Server-Sent Event as a client receives it. */
export interface StreamEvent {
  event: string;
  id: string;
  data: Record<string, unknown>;
  /** When it arrived (ms since epoch). */
  at: number;
}

export interface EventStream {
  status: number;
  contentType: string | null;
  /** The body of an answer that is not a stream (an error envelope). */
  body?: unknown;
  /** Every event received so far, in order. */
  events: StreamEvent[];
  /** Comment lines received so far (`heartbeat`). */
  comments: string[];
  /** Resolves with the events once the server closed the stream. */
  ended: Promise<StreamEvent[]>;
  /** Resolves with the first event received (or already received) that `match` accepts; throws after `timeoutMs`. */
  until(match: (e: StreamEvent) => boolean, timeoutMs?: number): Promise<StreamEvent>;
  /** The client hangs up. */
  close(): void;
}

/**
 * Opens `url` as an EventSource would (Node's fetch, parsed by hand): `headers` are sent as
 * they are (`Last-Event-ID` to resume). A GET unless `request` says otherwise (a POST with its
 * body, for a stream that starts what it follows). An answer that is not `text/event-stream`
 * is read whole into `body`.
 */
export async function openEventStream(
  url: string,
  headers: Record<string, string>,
  request: { method?: string; body?: string } = {},
): Promise<EventStream> {
  const abort = new AbortController();
  const res = await fetch(url, { ...request, headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const contentType = res.headers.get('content-type');
  const events: StreamEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  if (!contentType?.startsWith('text/event-stream')) {
    const body: unknown = await res.json();
    return {
      status: res.status,
      contentType,
      body,
      events,
      comments,
      ended: Promise.resolve(events),
      until: never,
      close: () => undefined,
    };
  }

  let done = false;
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          parseBlock(buffer.slice(0, end), events, comments);
          buffer = buffer.slice(end + 2);
          for (const wake of waiters) wake();
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    } finally {
      done = true;
      for (const wake of waiters) wake();
    }
    return events;
  })();

  const until = (match: (e: StreamEvent) => boolean, timeoutMs = 10_000) =>
    new Promise<StreamEvent>((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`no such event within ${timeoutMs} ms; got ${JSON.stringify(events)}`)), timeoutMs);
      const check = () => {
        const found = events.find(match);
        if (found) finish(found);
        else if (done) finish(new Error(`the stream ended without such an event; got ${JSON.stringify(events)}`));
      };
      const finish = (outcome: StreamEvent | Error) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      waiters.add(check);
      check();
    });
  return { status: res.status, contentType, events, comments, ended, until, close: () => abort.abort() };
}

function parseBlock(block: string, events: StreamEvent[], comments: string[]): void {
  const fields: Record<string, string> = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) comments.push(line.slice(1).trim());
    else {
      const colon = line.indexOf(':');
      fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
    }
  }
  if (fields.event)
    events.push({ event: fields.event, id: fields.id, data: JSON.parse(fields.data) as Record<string, unknown>, at: Date.now() });
}

/** What an event says moved: `step:<id>:<status>`, `run:<status>`, `execution:<status>`. */
export const transition = (e: StreamEvent) => [e.event, ...(e.data.stepId ? [e.data.stepId] : []), e.data.status].join(':');

const never = () => Promise.reject(new Error('not a stream'));
