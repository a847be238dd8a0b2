import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres } from './embedded-postgres';

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
