import type { Request, Response } from 'express';
import { setCredentialCheck } from '../auth/credential-check';
import { DomainError } from '../errors/domain-error';
import { LiveSource, LiveStreams, LiveView } from './live-record';

/** A record of one part whose status is `status` (final when `done`). */
const view = (status: string, done = false): LiveView => ({
  parts: [{ version: status, event: 'thing', data: { status } }],
  state: { thing: { status } },
  final: done,
});

/** A response that keeps what was written. */
function fakeResponse(): { res: Response; written: () => string; ended: () => boolean } {
  let body = '';
  let ended = false;
  const res = {
    on: () => res,
    status: () => res,
    set: () => res,
    flushHeaders: () => undefined,
    write: (chunk: string) => ((body += chunk), true),
    end: () => (ended = true),
  };
  return { res: res as unknown as Response, written: () => body, ended: () => ended };
}

const request = (lastEventId?: string) => ({ get: () => lastEventId }) as unknown as Request;

/** A source whose reads answer `views` in turn; its watch calls the check once per read, and answers null (a timeout) when it does not change. */
function source(views: LiveView[], organizationId = 'org-1'): LiveSource {
  let i = 0;
  return {
    organizationId,
    read: () => Promise.resolve(views[Math.min(i++, views.length - 1)]),
    watch: async <T>(_timeoutMs: number, check: () => Promise<T | null>) => check(),
  };
}

describe('LiveStreams', () => {
  it('writes the state, a heartbeat while nothing moves, then each change, and ends after the final one', async () => {
    const { res, written, ended } = fakeResponse();
    await new LiveStreams().stream(request(), res, view('a'), source([view('a'), view('b'), view('c', true)]));
    expect(written()).toBe(
      'event: state\nid: a\ndata: {"thing":{"status":"a"}}\n\n' +
        ': heartbeat\n\n' +
        'event: thing\nid: b\ndata: {"status":"b"}\n\n' +
        'event: thing\nid: c\ndata: {"status":"c"}\n\n',
    );
    expect(ended()).toBe(true);
  });

  it('resumes after Last-Event-ID without the state; a malformed one gets the state', async () => {
    const resumed = fakeResponse();
    await new LiveStreams().stream(request('b'), resumed.res, view('c', true), source([]));
    expect(resumed.written()).toBe('event: thing\nid: c\ndata: {"status":"c"}\n\n');

    const fresh = fakeResponse();
    await new LiveStreams().stream(request('b.c'), fresh.res, view('c', true), source([]));
    expect(fresh.written()).toBe('event: state\nid: c\ndata: {"thing":{"status":"c"}}\n\n');
  });

  it("refuses an organization's stream past its most open ones with 429, and takes it again once one ended", async () => {
    const streams = new LiveStreams();
    streams.maxPerOrganization = 1;
    // A stream that waits on its record until released.
    let release = () => {};
    let open: Promise<void> = Promise.resolve();
    const watching = new Promise<void>((started) => {
      const held: LiveSource = {
        organizationId: 'org-1',
        read: () => Promise.resolve(view('b', true)),
        watch: <T>(_timeoutMs: number, check: () => Promise<T | null>) =>
          new Promise<T | null>((resolve) => {
            release = () => void check().then(resolve);
            started();
          }),
      };
      open = streams.stream(request(), fakeResponse().res, view('a'), held);
    });
    await watching;
    const refused = streams.stream(request(), fakeResponse().res, view('a'), source([view('a', true)]));
    await expect(refused).rejects.toMatchObject({
      code: 'RATE_LIMIT_EXCEEDED',
      message: 'Your organization has 1 live streams open on this instance; close one first',
    });
    // Another organization's streams are counted apart.
    const other = fakeResponse();
    await streams.stream(request(), other.res, view('a'), source([view('b', true)], 'org-2'));
    expect(other.ended()).toBe(true);
    release();
    await open;
    const again = fakeResponse();
    await streams.stream(request(), again.res, view('a', true), source([]));
    expect(again.ended()).toBe(true);
  });

  /** A source whose record never moves: each watch waits its whole timeout (here a few ms, on a real timer). */
  const still = (): LiveSource => ({
    organizationId: 'org-1',
    read: () => Promise.resolve(view('a')),
    watch: <T>() => new Promise<T | null>((resolve) => setTimeout(() => resolve(null), 5)),
  });

  it('ends a stream whose credential the check refuses: an error event with the envelope, then the end', async () => {
    const streams = new LiveStreams();
    streams.credentialCheckMs = 10;
    const req = request();
    let checks = 0;
    setCredentialCheck(req, async () => {
      // The first check fails for another reason (the database away): the stream goes on.
      if (++checks === 1) throw new Error('connection refused');
      if (checks === 3) throw new DomainError('UNAUTHORIZED', 'The API key is not valid');
    });
    const { res, written, ended } = fakeResponse();
    await streams.stream(req, res, view('a'), still(), 1000);
    expect(checks).toBe(3);
    // Heartbeats aside (the watches that timed out meanwhile).
    expect(written().replace(/: heartbeat\n\n/g, '')).toBe(
      'event: state\nid: a\ndata: {"thing":{"status":"a"}}\n\n' +
        'event: error\ndata: {"error":{"code":"UNAUTHORIZED","message":"The API key is not valid","status":401}}\n\n',
    );
    expect(ended()).toBe(true);
  });

  it('ends a stream after maxSeconds with a reconnect event', async () => {
    const streams = new LiveStreams();
    streams.maxSeconds = 0.02;
    const { res, written, ended } = fakeResponse();
    await streams.stream(request(), res, view('a'), still(), 1000);
    expect(written().replace(/: heartbeat\n\n/g, '')).toBe(
      'event: state\nid: a\ndata: {"thing":{"status":"a"}}\n\nevent: reconnect\ndata: {}\n\n',
    );
    expect(ended()).toBe(true);
  });

  it('ends its streams when the application shuts down', async () => {
    const streams = new LiveStreams();
    const { res, ended } = fakeResponse();
    streams.beforeApplicationShutdown();
    await streams.stream(request(), res, view('a'), source([view('a')]));
    expect(ended()).toBe(true);
  });
});
