import { chmodSync, closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * Node 24's V8 (13.6) can free a WebAssembly import wrapper twice when its code GC runs while
 * another thread tiers the wrapper up; the process then aborts with
 * `Check failed: jit_page_->allocations_.erase(addr) == 1` (nodejs/node#64500, fixed in V8 by
 * "Fix lookup of wrappers marked is_dying", not backported to 24.x as of 24.21). PGlite's WASM
 * is the only WebAssembly here, and with code GC off the race cannot happen. The cost: machine
 * code that tiering replaced stays allocated (30–45 MB more after a few walkthroughs, README).
 * V8 reads this flag each time code becomes dead, so setting it before the first PGlite suffices.
 */
function avoidWasmCodeGcCrash(): void {
  setFlagsFromString('--no-wasm-code-gc');
}

/** The file name Postgres clients look for in a socket directory, for port 5432. */
const SOCKET_NAME = '.s.PGSQL.5432';

/**
 * Makes the data folder this OS user's alone: the folder and every folder in it 0700, every
 * file 0600 (symbolic links are left as they are, and not followed). PGlite's first start
 * writes about a thousand files 0666 whatever the umask (the WAL and `pg_authid`, which holds
 * password hashes, among them); Postgres itself then makes its files 0600, but a few with the
 * process umask (`pg_internal.init`, statistics at shutdown). Iterative: a deep tree cannot
 * overflow the stack.
 */
export function makePrivate(root: string): void {
  const folders = [root];
  while (folders.length) {
    const folder = folders.pop()!;
    chmodSync(folder, 0o700);
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) folders.push(path);
      else if (!entry.isSymbolicLink() && (lstatSync(path).mode & 0o777) !== 0o600) chmodSync(path, 0o600);
    }
  }
}

/** Another process (a running service, or a CLI command) has the data folder open. */
export class DataFolderInUseError extends Error {
  override name = 'DataFolderInUseError';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `A service is running on the embedded database in ${dataDir} (process ${pid} holds ${join(dataDir, 'pglite.lock')}): ` +
        'use the API, or stop the service first',
    );
  }
}

/** Lock files this process holds (two opens of one folder in one process conflict too). */
const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * `DATA_DIR/pglite.lock` (0600) holds the pid of the one process that has the folder open: PGlite
 * is a single-process database, and a second process opening its files would lose writes. A
 * lock whose process is gone (killed, crashed) is taken over; one naming this process's own pid
 * is left by an earlier process of the same pid (a container restarted), unless this process
 * holds it already. Released at stop, and at exit.
 */
function lockDataFolder(dataDir: string): string {
  const lockPath = join(dataDir, 'pglite.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(lockPath);
      return lockPath;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw error;
    }
    const pid = Number.parseInt(readLock(lockPath), 10);
    if (held.has(lockPath) || (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))) {
      throw new DataFolderInUseError(dataDir, held.has(lockPath) ? process.pid : pid);
    }
    rmSync(lockPath, { force: true });
  }
}

function readLock(lockPath: string): string {
  try {
    return readFileSync(lockPath, 'utf8');
  } catch {
    return '';
  }
}

function unlockDataFolder(lockPath: string): void {
  if (!held.delete(lockPath)) return;
  if (readLock(lockPath).trim() === String(process.pid)) rmSync(lockPath, { force: true });
}

process.on('exit', () => {
  for (const lockPath of [...held]) unlockDataFolder(lockPath);
});

/**
 * Real Postgres compiled to WASM (PGlite), served so the ordinary `pg` driver, the same
 * migrations and the same SQL run as against a Postgres server. It listens on a Unix socket in
 * a directory of its own (mode 0700, the socket 0600), never on a TCP port: PGlite has no
 * authentication, so only this OS user may reach it. Its data folder is private the same way
 * (`makePrivate`, at start, after PGlite's first files, and at stop).
 * Limits: every connection shares one session, so transactions are serialized and advisory
 * locks do not exclude each other; nothing in the service may depend on those for correctness.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    /** The private directory holding the socket. */
    readonly socketDir: string,
    readonly url: string,
    /** The data folder, null in memory. */
    readonly dataPath: string | null,
    private readonly lockPath: string | null,
  ) {}

  /** `dataDir` null keeps everything in memory (used by tests). */
  static async start(dataDir: string | null, maxConnections: number): Promise<EmbeddedPostgres> {
    let path = 'memory://';
    let lockPath: string | null = null;
    if (dataDir) {
      path = join(dataDir, 'pglite');
      // 0700 for DATA_DIR too when this makes it; an existing folder of an earlier version is repaired.
      mkdirSync(path, { recursive: true, mode: 0o700 });
      lockPath = lockDataFolder(dataDir);
      makePrivate(path);
    }
    try {
      return await EmbeddedPostgres.open(path, dataDir, maxConnections, lockPath);
    } catch (error) {
      if (lockPath) unlockDataFolder(lockPath);
      throw error;
    }
  }

  private static async open(
    path: string,
    dataDir: string | null,
    maxConnections: number,
    lockPath: string | null,
  ): Promise<EmbeddedPostgres> {
    avoidWasmCodeGcCrash();
    const db = await PGlite.create(path);
    if (dataDir) makePrivate(path);
    // A fresh directory under the system's temporary one (mkdtemp makes it 0700): DATA_DIR may
    // be deeper than a socket path may be long (108 bytes).
    const socketDir = mkdtempSync(join(tmpdir(), 'platform-pglite-'));
    const server = new PGLiteSocketServer({ db, path: join(socketDir, SOCKET_NAME), maxConnections });
    await server.start();
    chmodSync(join(socketDir, SOCKET_NAME), 0o600);
    const url = `postgres://postgres@${encodeURIComponent(socketDir)}/postgres`;
    return new EmbeddedPostgres(db, server, socketDir, url, dataDir ? path : null, lockPath);
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    rmSync(this.socketDir, { recursive: true, force: true });
    // What Postgres wrote with the process umask since (statistics at shutdown, the relation cache).
    if (this.dataPath) makePrivate(this.dataPath);
    if (this.lockPath) unlockDataFolder(this.lockPath);
  }
}
