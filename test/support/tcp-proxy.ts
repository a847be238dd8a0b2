import { createServer, Server, Socket } from 'node:net';
import { join } from 'node:path';

export interface TcpProxy {
  /** `target` with host and port replaced by the proxy's. */
  url: string;
  /** Drops every open connection and refuses new ones until `restore`. */
  cut(): void;
  restore(): void;
  /**
   * Arms a drop: on the first connection whose client sends messages containing each of `texts`
   * in turn, the message with the last (up to its Sync, for an extended query) reaches the
   * server, and the connection then drops before any answer comes back: the client cannot tell
   * whether it took effect. Resolves once it has dropped.
   */
  dropAfter(...texts: string[]): Promise<void>;
  close(): Promise<void>;
}

/** A Sync message (the end of an extended query's messages). */
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);

/** A real TCP proxy on loopback in front of a Postgres URL, to cut the database away and bring it back. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const upstreamUrl = new URL(target);
  const sockets = new Set<Socket>();
  let accepting = true;
  let drop: { texts: string[]; dropped: () => void } | null = null;
  const server: Server = createServer((client) => {
    if (!accepting) return client.destroy();
    /** How many of the armed drop's texts this connection has sent (past the last: sending its query's end). */
    let matched = 0;
    let matching: typeof drop = null;
    const upstream = new Socket();
    // A host that is a directory is a Unix socket (the embedded PGlite's), as libpq reads it.
    const host = decodeURIComponent(upstreamUrl.hostname);
    if (host.startsWith('/')) upstream.connect(join(host, `.s.PGSQL.${upstreamUrl.port || 5432}`));
    else upstream.connect(Number(upstreamUrl.port || 5432), upstreamUrl.hostname);
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      if (matching !== drop) [matching, matched] = [drop, 0];
      if (drop && matched < drop.texts.length && chunk.includes(drop.texts[matched])) matched++;
      if (!drop || matched < drop.texts.length) {
        if (!upstream.write(chunk)) client.pause();
        return;
      }
      // The query goes through to its end; its answer does not come back.
      upstream.unpipe(client);
      const whole = chunk[0] === 0x51 || chunk.subarray(-SYNC.length).equals(SYNC);
      if (!whole) return void upstream.write(chunk);
      const { dropped } = drop;
      drop = null;
      upstream.end(chunk, () => {
        client.destroy();
        dropped();
      });
    });
    upstream.on('drain', () => client.resume());
    client.on('end', () => upstream.end());
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const viaProxy = new URL(target);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String((server.address() as { port: number }).port);
  return {
    url: viaProxy.toString(),
    cut() {
      accepting = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      accepting = true;
    },
    dropAfter: (...texts: string[]) => new Promise<void>((dropped) => (drop = { texts, dropped })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
