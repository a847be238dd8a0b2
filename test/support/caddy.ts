import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { eventually } from './eventually';
import { freePort } from './service-process';

export interface CaddyProxy {
  /** https://localhost:<port>, served with `ca`. */
  url: string;
  /** http://localhost:<port>, which redirects to `url`. */
  httpUrl: string;
  /** The test certificate, self-signed: the one CA a client must trust. */
  ca: Buffer;
  /** Caddy's log (JSON lines) so far. */
  output(): string;
  close(): Promise<void>;
}

const CADDYFILE = join(__dirname, '../../deploy/Caddyfile');

/**
 * deploy/Caddyfile as compose runs it, but by the `caddy` binary (Debian's package) on free
 * loopback ports, with a certificate made for `localhost` (TLS_MODE=files), in front of
 * `upstreams` (host:port each). Resolves once it answers over HTTPS.
 */
export async function startCaddy(upstreams: string[]): Promise<CaddyProxy> {
  if (spawnSync('caddy', ['version']).error) {
    throw new Error('caddy is not installed: this test runs deploy/Caddyfile with it (apt-get install -y caddy; CI installs it)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'platform-caddy-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  // Self-signed for localhost: the client trusts exactly this certificate.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const child = spawn('caddy', ['run', '--config', CADDYFILE, '--adapter', 'caddyfile'], {
    env: {
      PATH: process.env.PATH,
      // Caddy's storage (and anything else it writes) stays in the temporary folder.
      HOME: dir,
      XDG_DATA_HOME: join(dir, 'data'),
      XDG_CONFIG_HOME: join(dir, 'config'),
      PUBLIC_HOST: 'localhost',
      TLS_MODE: 'files',
      TLS_CERT_FILE: certFile,
      TLS_KEY_FILE: keyFile,
      API_UPSTREAMS: upstreams.join(' '),
      HTTP_PORT: String(httpPort),
      HTTPS_PORT: String(httpsPort),
      PROXY_ADMIN: 'off',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => log.push(chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const output = () => Buffer.concat(log).toString('utf8');
  const ca = readFileSync(certFile);
  const url = `https://localhost:${httpsPort}`;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`caddy exited (code ${child.exitCode}):\n${output()}`);
        return request(url)
          .get('/health/live')
          .ca(ca)
          .then(
            (res) => res.status === 200,
            () => false,
          );
      },
      { timeoutMs: 20_000, intervalMs: 200, message: `caddy to answer on ${url}` },
    );
  } catch (error) {
    await close();
    throw error;
  }
  return { url, httpUrl: `http://localhost:${httpPort}`, ca, output, close };
}
