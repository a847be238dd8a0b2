import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { eventually } from './eventually';

export interface ServiceProcess {
  port: number;
  child: ChildProcess;
  /** True while the process has not exited. */
  alive(): boolean;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * What the process wrote so far, with `captureOutput` only (otherwise ''): all of stdout, then
   * all of stderr, each stream whole (a line is never cut by the other's writes). After kill()
   * it holds everything the process wrote.
   */
  output(): string;
}

export interface StartServiceOptions {
  readyTimeoutMs?: number;
  /**
   * Collect stdout and stderr for output() (stderr is still copied to the test's stderr).
   * Without it stdout is ignored and stderr inherited, as before.
   */
  captureOutput?: boolean;
  /** The port to listen on (a restart on the same port, behind a proxy); default a free one. */
  port?: number;
  /** The command line to run instead of the service's own (`[node, ...args]`), e.g. wrapped in a network namespace. */
  wrap?: (command: string[]) => string[];
}

/** A TCP port free on loopback right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const root = join(__dirname, '../..');

/**
 * The command that runs one of the service's entry points (`main`, `cli`) as its
 * own process: the build in dist/, which the e2e global setup brings up to date before any spec
 * runs (scripts/build-if-stale.mjs). A spawn is ready in about 2 s from dist/; compiling src/
 * through ts-node on every spawn took 7 s of CPU each, and the chaos, restart and schedule
 * specs spawn dozens.
 */
export function entryPoint(name: 'main' | 'cli'): string[] {
  return [process.execPath, join(root, 'dist/src', `${name}.js`)];
}

/**
 * The service as its own OS process (dist/src/main.js), ready once /health/ready
 * answers 200. Used to run real worker processes beside the test's API, and to kill them.
 */
export async function startService(env: Record<string, string>, options: number | StartServiceOptions = {}): Promise<ServiceProcess> {
  const {
    readyTimeoutMs = 60_000,
    captureOutput = false,
    port = await freePort(),
    wrap = (command: string[]) => command,
  } = typeof options === 'number' ? { readyTimeoutMs: options } : options;
  const [file, ...args] = wrap(entryPoint('main'));
  const child = spawn(file, args, {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', LOG_LEVEL: 'error', ...env, PORT: String(port) },
    stdio: captureOutput ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  // 'close' comes once the process has exited and its stdio streams are read to the end.
  const drained = captureOutput ? new Promise<void>((resolve) => child.once('close', () => resolve())) : Promise.resolve();
  if (captureOutput) {
    child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      process.stderr.write(chunk);
    });
  }
  const service: ServiceProcess = {
    port,
    child,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill(signal = 'SIGKILL') {
      if (service.alive()) child.kill(signal);
      await exited;
      await drained;
    },
    output: () => Buffer.concat(stdout).toString('utf8') + Buffer.concat(stderr).toString('utf8'),
  };
  try {
    await eventually(
      async () => {
        if (!service.alive()) throw new Error(`service exited during start (code ${child.exitCode})`);
        return fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (r) => r.ok,
          () => false,
        );
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 200, message: `the service on port ${port} to answer /health/ready` },
    );
  } catch (error) {
    await service.kill();
    throw error;
  }
  return service;
}
