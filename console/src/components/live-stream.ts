import { EventSourceParserStream } from 'eventsource-parser/stream';
import { useEffect, useRef, useState } from 'react';
import { useSession } from './session-context';

/** How long to wait before opening a stream again after it broke. */
const RECONNECT_MS = 2000;

/**
 * Follows a live stream of the API (a run's `/events`): `onEvent` for every event, the stream
 * opened again after a break from the last event's id (the API sends what changed since).
 * Answers whether the stream is open, so a page can poll while it is not. `path` null: no
 * stream (the record is final). The stream ends when the API closes it after the final state;
 * after `reconnect` (it lasted STREAM_MAX_SECONDS) it is opened again at once, after `error`
 * (the token was refused: the session refreshes it, or the new request is refused) after a pause.
 */
export function useLiveStream(path: string | null, onEvent: (event: string) => void): boolean {
  const { session } = useSession();
  const [open, setOpen] = useState(false);
  const handler = useRef(onEvent);
  handler.current = onEvent;

  useEffect(() => {
    if (!path) return;
    const abort = new AbortController();
    let lastEventId: string | undefined;
    const follow = async () => {
      while (!abort.signal.aborted) {
        let ended = false;
        let last: string | undefined;
        try {
          const response = await session.stream(path, abort.signal, lastEventId);
          if (!response.ok || !response.body) return; // refused (gone, not allowed): the page's own query shows why
          setOpen(true);
          const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            if (value.id) lastEventId = value.id;
            last = value.event;
            if (last === 'reconnect' || last === 'error') continue;
            handler.current(value.event ?? 'message');
          }
          ended = true;
        } catch {
          // A broken connection: opened again below.
        }
        setOpen(false);
        if (abort.signal.aborted || (ended && last !== 'reconnect' && last !== 'error')) return;
        if (last !== 'reconnect') await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    };
    void follow();
    return () => abort.abort();
  }, [path, session]);
  return open;
}
