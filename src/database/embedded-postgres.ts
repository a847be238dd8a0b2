import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * Real Postgres compiled to WASM (PGlite), served on a loopback port so the ordinary `pg`
 * driver, the same migrations and the same SQL run as against a Postgres server.
 * Limits: every connection shares one session, so transactions are serialized and advisory
 * locks do not exclude each other; nothing in the service may depend on those for correctness.
 */
export class EmbeddedPostgres {
  private constructor(
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    readonly url: string,
  ) {}

  /** `dataDir` null keeps everything in memory (used by tests). */
  static async start(dataDir: string | null, maxConnections: number): Promise<EmbeddedPostgres> {
    let path = 'memory://';
    if (dataDir) {
      path = join(dataDir, 'pglite');
      mkdirSync(path, { recursive: true });
    }
    const db = await PGlite.create(path);
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
    await server.start();
    return new EmbeddedPostgres(db, server, `postgres://postgres@${server.getServerConn()}/postgres`);
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
  }
}
