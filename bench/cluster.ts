import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { freePort } from './support';

/** The newest PostgreSQL server binaries of the machine (`/usr/lib/postgresql/<version>/bin`). */
export function newestPgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+$/.test(v)) : [];
  if (!versions.length) throw new Error('No PostgreSQL server binaries in /usr/lib/postgresql: set SOAK_PG_BIN');
  return join(base, versions.sort((a, b) => Number(b) - Number(a))[0], 'bin');
}

/**
 * A throwaway PostgreSQL cluster: initdb in a temporary directory, a postmaster on a free port
 * with `extra` server arguments (`-c name=value`), so a benchmark owns its settings and its CPU.
 */
export class Cluster {
  private readonly dir = mkdtempSync(join(tmpdir(), 'platform-bench-pg-'));
  private postmaster?: ChildProcess;
  port = 0;

  constructor(
    private readonly pgBin: string,
    private readonly extra: string[],
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** The URL of database `name` on this cluster. */
  urlOf(name: string): string {
    return this.url.replace(/\/postgres$/, `/${name}`);
  }

  async start(): Promise<void> {
    chmodSync(this.dir, 0o777);
    const data = join(this.dir, 'data');
    run(join(this.pgBin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    this.port = await freePort();
    const args = ['-D', data, '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1', ...this.extra];
    this.postmaster = spawn(...asPostgres(join(this.pgBin, 'postgres'), args), { stdio: ['ignore', 'ignore', 'inherit'] });
    for (let i = 0; i < 100; i++) {
      const client = new Client({ connectionString: this.url });
      const up = await client.connect().then(
        () => true,
        () => false,
      );
      await client.end().catch(() => undefined);
      if (up) return;
      await sleep(200);
    }
    throw new Error('the benchmark cluster did not start');
  }

  /** The postmaster's pid (from its pid file: it may run under runuser), for the CPU of its backends. */
  get pid(): number | undefined {
    const file = join(this.dir, 'data', 'postmaster.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
  }

  /**
   * CPU seconds the cluster has used since it started: the postmaster's own, its ended
   * children's (which it has waited for) and its living ones' (the backends of open connections).
   */
  cpuSeconds(): number {
    const pid = this.pid;
    if (!pid) return 0;
    const own = procStat(pid);
    return (own ? own.utime + own.stime + own.cutime + own.cstime : 0) + childrenCpuSeconds(pid);
  }

  async stop(): Promise<void> {
    const postmaster = this.postmaster;
    if (postmaster && postmaster.exitCode === null) {
      const exited = new Promise((resolve) => postmaster.once('exit', resolve));
      // To the postmaster itself (a fast shutdown): runuser, when it runs it, does not pass signals on.
      const pid = this.pid;
      if (pid) process.kill(pid, 'SIGINT');
      else postmaster.kill('SIGINT');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** As root, PostgreSQL runs as the `postgres` user. */
function asPostgres(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

function run(command: string, args: string[]): void {
  execFileSync(...asPostgres(command, args), { stdio: ['ignore', 'ignore', 'inherit'] });
}

interface ProcStat {
  ppid: number;
  /** Seconds. */
  utime: number;
  stime: number;
  cutime: number;
  cstime: number;
}

const TICKS_PER_SECOND = 100;

function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (i: number) => Number(fields[i]) / TICKS_PER_SECOND;
    return { ppid: Number(fields[1]), utime: seconds(11), stime: seconds(12), cutime: seconds(13), cstime: seconds(14) };
  } catch {
    return null; // The process ended meanwhile.
  }
}

/** CPU seconds of the living children of `parentPid` (the postmaster's backends). */
function childrenCpuSeconds(parentPid: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.ppid === parentPid) total += stat.utime + stat.stime;
  }
  return total;
}
