import { createServer, Server, Socket } from 'node:net';
import { join } from 'node:path';

export interface TcpProxy {
  /** `target` with host and port replaced by the proxy's. */
  url: string;
  /** Drops every open connection and refuses new ones until `restore`. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** A real TCP proxy on loopback in front of a Postgres URL, to cut the database away and bring it back. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const upstreamUrl = new URL(target);
  const sockets = new Set<Socket>();
  let accepting = true;
  const server: Server = createServer((client) => {
    if (!accepting) return client.destroy();
    const upstream = new Socket();
    // A host that is a directory is a Unix socket (the embedded PGlite's), as libpq reads it.
    const host = decodeURIComponent(upstreamUrl.hostname);
    if (host.startsWith('/')) upstream.connect(join(host, `.s.PGSQL.${upstreamUrl.port || 5432}`));
    else upstream.connect(Number(upstreamUrl.port || 5432), upstreamUrl.hostname);
    client.pipe(upstream).pipe(client);
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
