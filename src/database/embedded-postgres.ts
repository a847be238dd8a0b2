import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
 * Real Postgres compiled to WASM (PGlite), served so the ordinary `pg` driver, the same
 * migrations and the same SQL run as against a Postgres server. It listens on a Unix socket in
 * a directory of its own (mode 0700, the socket 0600), never on a TCP port: PGlite has no
 * authentication, so only this OS user may reach it.
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
  ) {}

  /** `dataDir` null keeps everything in memory (used by tests). */
  static async start(dataDir: string | null, maxConnections: number): Promise<EmbeddedPostgres> {
    let path = 'memory://';
    if (dataDir) {
      path = join(dataDir, 'pglite');
      mkdirSync(path, { recursive: true });
    }
    avoidWasmCodeGcCrash();
    const db = await PGlite.create(path);
    // A fresh directory under the system's temporary one (mkdtemp makes it 0700): DATA_DIR may
    // be deeper than a socket path may be long (108 bytes).
    const socketDir = mkdtempSync(join(tmpdir(), 'platform-pglite-'));
    const server = new PGLiteSocketServer({ db, path: join(socketDir, SOCKET_NAME), maxConnections });
    await server.start();
    chmodSync(join(socketDir, SOCKET_NAME), 0o600);
    const url = `postgres://postgres@${encodeURIComponent(socketDir)}/postgres`;
    return new EmbeddedPostgres(db, server, socketDir, url);
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    rmSync(this.socketDir, { recursive: true, force: true });
  }
}
