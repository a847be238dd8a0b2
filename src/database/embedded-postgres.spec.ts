import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres } from './embedded-postgres';

/** Every folder and file under `root` (itself as "./") with its permission bits, folders ending in "/". */
function modes(root: string): Map<string, number> {
  const found = new Map<string, number>([['./', statSync(root).mode & 0o777]]);
  for (const name of readdirSync(root, { recursive: true }) as string[]) {
    const stat = lstatSync(join(root, name));
    found.set(stat.isDirectory() ? `${name}/` : name, stat.mode & 0o777);
  }
  return found;
}

/** What of `modes(root)` another OS user could read or enter: none when the folder is private. */
function notPrivate(root: string): string[] {
  return [...modes(root)]
    .filter(([name, mode]) => mode !== (name.endsWith('/') ? 0o700 : 0o600))
    .map(([name, mode]) => `${name} ${mode.toString(8)}`);
}

async function query(embedded: EmbeddedPostgres, sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: embedded.url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** PGlite has no authentication: it must be reachable by this OS user's processes only. */
describe('EmbeddedPostgres', () => {
  let embedded: EmbeddedPostgres;
  beforeAll(async () => {
    embedded = await EmbeddedPostgres.start(null, 5);
  });
  afterAll(() => embedded.stop());

  // Connecting to a Unix socket needs write permission on it: with these modes, only this OS
  // user (and root) can (psql run as `nobody` gets "Permission denied").
  it('listens on a Unix socket in a private directory (0700, socket 0600), not on a TCP port', () => {
    const url = new URL(embedded.url);
    expect(decodeURIComponent(url.hostname)).toBe(embedded.socketDir);
    expect(url.port).toBe('');
    expect(statSync(embedded.socketDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(embedded.socketDir, '.s.PGSQL.5432')).mode & 0o777).toBe(0o600);
  });

  it('answers this user', async () => {
    const client = new Client({ connectionString: embedded.url });
    await client.connect();
    try {
      expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  });
});

/** The data folder holds the WAL, every table and `pg_authid`: no other OS user may read it. */
describe('EmbeddedPostgres on disk', () => {
  // One folder for both cases (a start on a new folder runs initdb, the slow part): the second
  // takes the folder the first made, as an earlier version would have left it.
  let dataDir: string;
  let data: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'platform-embedded-modes-'));
    data = join(dataDir, 'pglite');
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('makes a fresh data folder 0700 with its files 0600, and keeps it so through writes and a stop', async () => {
    const embedded = await EmbeddedPostgres.start(dataDir, 5);
    try {
      expect(statSync(data).mode & 0o777).toBe(0o700);
      expect(modes(data).size).toBeGreaterThan(900);
      expect(notPrivate(data)).toEqual([]);
      await query(embedded, "CREATE TABLE secrets AS SELECT 'hash-' || n AS value FROM generate_series(1, 20000) n");
      await query(embedded, 'CHECKPOINT');
    } finally {
      await embedded.stop();
    }
    expect(notPrivate(data)).toEqual([]);
  }, 120_000);

  it('repairs the modes of an existing folder at start: folders 0755 and files 0666 become 0700 and 0600', async () => {
    // The folder of the case before, with its table (made here when that case did not run).
    if (!existsSync(data)) {
      const made = await EmbeddedPostgres.start(dataDir, 5);
      await query(made, "CREATE TABLE secrets AS SELECT 'hash-1' AS value");
      await made.stop();
    }
    // As an earlier version left it.
    for (const [name] of modes(data)) chmodSync(join(data, name), name.endsWith('/') ? 0o755 : 0o666);
    expect(notPrivate(data).length).toBeGreaterThan(900);
    const embedded = await EmbeddedPostgres.start(dataDir, 5);
    try {
      expect(notPrivate(data)).toEqual([]);
      const [{ rows }] = (await query(embedded, 'SELECT count(*)::int AS rows FROM secrets')) as Array<{ rows: number }>;
      expect(rows).toBeGreaterThan(0);
    } finally {
      await embedded.stop();
    }
  }, 120_000);
});
