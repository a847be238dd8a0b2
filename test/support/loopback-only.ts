import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A network namespace of its own for one process (`unshare -rn`: a user namespace maps the
 * caller to root inside, so no privilege is needed): its only interface is `lo`, so any
 * connection beyond loopback fails with ENETUNREACH.
 *
 * The outside is reached only through Unix sockets, which are files and so cross namespaces:
 * inside, a small bridge process listens on 127.0.0.1 at each `reachable` port and passes
 * connections to this process, which connects to the same port on the host's loopback (the
 * database); and the service's own port is reached from the host at the same number on
 * 127.0.0.1. Besides, a preload module records in a file every connection or DNS lookup the
 * service attempts to anything but loopback or a Unix socket.
 */
export interface LoopbackOnly {
  /** For startService: runs the command inside the namespace, once the bridge listens. */
  wrap(command: string[]): string[];
  /** For the service's environment: loads the recorder of outbound attempts (it writes to OUTBOUND_ATTEMPTS_LOG). */
  nodeOptions: string;
  /** True once the service has loaded the recorder. */
  recorderLoaded(): boolean;
  /** The non-loopback connections and lookups the service attempted, in order. */
  outboundAttempts(): string[];
  close(): Promise<void>;
}

/** The bridge inside the namespace (plain JS for `node -e`; its arguments: folder, service port, reachable ports). */
const BRIDGE = `
const net = require('node:net');
const fs = require('node:fs');
const [dir, port, ...reachable] = process.argv.slice(1);
const pipe = (a, b) => { a.pipe(b).pipe(a); a.on('error', () => b.destroy()); b.on('error', () => a.destroy()); };
let waiting = reachable.length + 1;
const listening = () => { if (--waiting === 0) fs.writeFileSync(dir + '/ready', String(process.pid)); };
net.createServer((s) => pipe(s, net.connect(Number(port), '127.0.0.1'))).listen(dir + '/service.sock', listening);
for (const p of reachable) net.createServer((s) => pipe(s, net.connect(dir + '/out-' + p + '.sock'))).listen(Number(p), '127.0.0.1', listening);
// Ends with the service (its parent, once the shell has exec'd into it).
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 500);
`;

/**
 * Preloaded into the service: records attempts to reach anything but loopback, in
 * OUTBOUND_ATTEMPTS_LOG or else in `log`: a process the service starts with NODE_OPTIONS but
 * another environment records into the service's log, not into a file named "undefined".
 */
const recorder = (log: string) => `
const net = require('node:net');
const dns = require('node:dns');
const fs = require('node:fs');
const log = process.env.OUTBOUND_ATTEMPTS_LOG || ${JSON.stringify(log)};
fs.writeFileSync(log + '.loaded', String(process.pid));
// Wildcards too: listen() looks up the address it binds to.
const local = (host) => host === undefined || host === null || host === '' || host === 'localhost' ||
  /^127\\./.test(host) || host === '::1' || /^::ffff:127\\./.test(host) || host === '0.0.0.0' || host === '::';
const record = (what) => fs.appendFileSync(log, what + '\\n');
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const options = typeof first === 'object' && first !== null ? first : { port: first, host: typeof args[1] === 'string' ? args[1] : undefined };
  if (!options.path && !(typeof first === 'string' && isNaN(Number(first))) && !local(options.host)) {
    record('connect ' + options.host + ':' + options.port);
  }
  return connect.apply(this, args);
};
for (const target of [dns, dns.promises]) {
  const lookup = target.lookup;
  target.lookup = function (host, ...rest) {
    if (!local(host)) record('lookup ' + host);
    return lookup.call(this, host, ...rest);
  };
}
`;

const run = promisify(execFile);

/** Runs a shell script in a fresh loopback-only namespace, as the service runs; answers its stdout. */
export async function inLoopbackOnlyNamespace(script: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run('unshare', ['-rn', 'sh', '-c', `ip link set lo up && ${script}`], { env: { ...process.env, ...env } });
  return stdout;
}

export async function loopbackOnly(servicePort: number, reachable: number[]): Promise<LoopbackOnly> {
  const dir = mkdtempSync(join(tmpdir(), 'loopback-only-'));
  const recorderFile = join(dir, 'recorder.js');
  const log = join(dir, 'outbound-attempts.log');
  writeFileSync(recorderFile, recorder(log));
  const sockets = new Set<Socket>();
  const pipe = (a: Socket, b: Socket) => {
    for (const s of [a, b]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    a.pipe(b).pipe(a);
    a.on('error', () => b.destroy());
    b.on('error', () => a.destroy());
  };
  const listen = (server: Server, ...at: [string] | [number, string]) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(...(at as [number, string]), () => resolve());
    });
  const servers: Server[] = [];
  for (const port of reachable) {
    const server = createServer((s) => pipe(s, connect(port, '127.0.0.1')));
    await listen(server, join(dir, `out-${port}.sock`));
    servers.push(server);
  }
  const front = createServer((s) => pipe(s, connect(join(dir, 'service.sock'))));
  await listen(front, servicePort, '127.0.0.1');
  servers.push(front);

  const bridgePid = () => (existsSync(join(dir, 'ready')) ? Number(readFileSync(join(dir, 'ready'), 'utf8')) : null);
  return {
    nodeOptions: `--require ${recorderFile}`,
    wrap: (command) => [
      'unshare',
      '-rn',
      'sh',
      '-c',
      // The bridge gets an empty NODE_OPTIONS: the recorder is for the service only.
      'ip link set lo up || exit 1\n' +
        `OUTBOUND_ATTEMPTS_LOG= NODE_OPTIONS= "$1" -e "$2" "$3" "$4" ${reachable.map((_, i) => `"$${i + 5}"`).join(' ')} &\n` +
        'until [ -e "$3/ready" ]; do sleep 0.05; done\n' +
        `shift ${4 + reachable.length}\n` +
        `OUTBOUND_ATTEMPTS_LOG="${log}" exec "$@"`,
      'sh',
      process.execPath,
      BRIDGE,
      dir,
      String(servicePort),
      ...reachable.map(String),
      ...command,
    ],
    recorderLoaded: () => existsSync(`${log}.loaded`),
    outboundAttempts: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
    async close() {
      const pid = bridgePid();
      if (pid) {
        try {
          process.kill(pid);
        } catch {
          // Already gone with the service.
        }
      }
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
