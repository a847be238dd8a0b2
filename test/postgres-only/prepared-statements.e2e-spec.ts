import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { commitCarrier, preparingClient } from '../../src/database/preparing-client';

/**
 * The statement cache against a real server (PGlite, one session for every connection, runs
 * without it): which statements a connection prepares, the bound, and a migration changing a
 * prepared statement's columns under it.
 */
describe('prepared statements (DB_STATEMENT_CACHE)', () => {
  const name = `platform_prepared_${randomBytes(4).toString('hex')}`;
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  let client: Client;

  const preparedHere = async (): Promise<string[]> =>
    (await client.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY statement')).rows.map(
      (r) => r.statement,
    );

  beforeAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
  });

  beforeEach(async () => {
    const Preparing = preparingClient(2);
    client = new Preparing({ connectionString: url });
    await client.connect();
    await client.query('DROP TABLE IF EXISTS things; CREATE TABLE things (id int PRIMARY KEY, label text); INSERT INTO things VALUES (1, $$one$$), (2, $$two$$)');
  });

  afterEach(async () => {
    await client.end();
  });

  afterAll(async () => {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('prepares a statement with parameters on its second use and answers the same rows every time', async () => {
    const select = 'SELECT id, label FROM things WHERE id = $1';
    const first = await client.query(select, [1]);
    expect(await preparedHere()).toEqual([]);
    const second = await client.query(select, [1]);
    const third = await client.query(select, [2]);
    expect([first.rows, second.rows, third.rows]).toEqual([[{ id: 1, label: 'one' }], [{ id: 1, label: 'one' }], [{ id: 2, label: 'two' }]]);
    expect(await preparedHere()).toEqual([select]);
  });

  it('sends statements without parameters as they are, several in one', async () => {
    await client.query('SELECT 1');
    await client.query('SELECT 1');
    const results = (await client.query('SELECT 1 AS a; SELECT 2 AS b')) as unknown as Array<{ rows: unknown[] }>;
    expect(results.map((r) => r.rows)).toEqual([[{ a: 1 }], [{ b: 2 }]]);
    expect(await preparedHere()).toEqual([]);
  });

  it('keeps at most its bound per connection and sends the rest unnamed', async () => {
    const statements = ['SELECT label FROM things WHERE id = $1', 'SELECT id FROM things WHERE label = $1', 'SELECT count(*)::int AS n FROM things WHERE id > $1'];
    const params: unknown[][] = [[1], ['two'], [0]];
    for (let round = 0; round < 3; round++)
      for (const [i, text] of statements.entries()) await client.query(text, params[i]);
    expect(await preparedHere()).toEqual([statements[1], statements[0]].sort());
    expect((await client.query(statements[2], [0])).rows).toEqual([{ n: 2 }]);
  });

  it('answers with the new columns when a migration changed a prepared statement’s outside a transaction', async () => {
    const select = 'SELECT * FROM things WHERE id = $1';
    await client.query(select, [1]);
    await client.query(select, [1]);
    await client.query('ALTER TABLE things ADD COLUMN note text');
    expect((await client.query(select, [1])).rows).toEqual([{ id: 1, label: 'one', note: null }]);
    expect((await client.query(select, [2])).rows).toEqual([{ id: 2, label: 'two', note: null }]);
  });

  it('fails the transaction it was in once, and answers unnamed after it', async () => {
    const select = 'SELECT * FROM things WHERE id = $1';
    await client.query(select, [1]);
    await client.query(select, [1]);
    await client.query('ALTER TABLE things ADD COLUMN note text');
    await client.query('BEGIN');
    await expect(client.query(select, [1])).rejects.toThrow('cached plan must not change result type');
    await client.query('ROLLBACK');
    expect((await client.query(select, [1])).rows).toEqual([{ id: 1, label: 'one', note: null }]);
  });

  it('carries statements with the COMMIT of their transaction, and drops them with a ROLLBACK', async () => {
    const carrier = commitCarrier(client)!;
    const labels = async () => (await client.query('SELECT label FROM things ORDER BY id')).rows.map((r) => r.label);
    await client.query('BEGIN');
    await client.query('UPDATE things SET label = $1 WHERE id = $2', ['uno', 1]);
    carrier.sendWithCommit(`INSERT INTO things VALUES (3, 'three')`);
    // Not sent yet: the transaction does not see it before its COMMIT.
    expect(await labels()).toEqual(['uno', 'two']);
    await client.query('COMMIT');
    expect(await labels()).toEqual(['uno', 'two', 'three']);

    await client.query('BEGIN');
    carrier.sendWithCommit(`INSERT INTO things VALUES (4, 'four')`);
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    await client.query('COMMIT');
    expect(await labels()).toEqual(['uno', 'two', 'three']);
  });

  it('fails the COMMIT when a carried statement fails, and commits nothing of the transaction', async () => {
    await client.query('BEGIN');
    await client.query('UPDATE things SET label = $1 WHERE id = $2', ['uno', 1]);
    commitCarrier(client)!.sendWithCommit(`INSERT INTO things VALUES (2, 'a duplicate key')`);
    await expect(client.query('COMMIT')).rejects.toThrow(/duplicate key/);
    await client.query('ROLLBACK');
    expect((await client.query('SELECT label FROM things ORDER BY id')).rows.map((r) => r.label)).toEqual(['one', 'two']);
    expect(commitCarrier(new Client({ connectionString: url }))).toBeNull();
  });

  it('prepares through a pool, which calls the client with a callback (as the job queue’s pool does)', async () => {
    const pool = new Pool({ connectionString: url, max: 1, Client: preparingClient(10) });
    try {
      const select = 'SELECT label FROM things WHERE id = $1';
      const answers = [];
      for (const id of [1, 2, 1]) answers.push((await pool.query(select, [id])).rows);
      const prepared = (await pool.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map((r) => r.statement);
      expect({ answers, prepared }).toEqual({ answers: [[{ label: 'one' }], [{ label: 'two' }], [{ label: 'one' }]], prepared: [select] });
      const failing = 'SELECT nope FROM things WHERE id = $1';
      for (let i = 0; i < 2; i++) await expect(pool.query(failing, [1])).rejects.toThrow('column "nope" does not exist');
    } finally {
      await pool.end();
    }
  });

  it('is the client of the service’s pool when DB_STATEMENT_CACHE is set, and not when it is 0', async () => {
    const cached = new DataSource(dataSourceOptions(url, 1, 10));
    const plain = new DataSource(dataSourceOptions(url, 1, 0));
    await Promise.all([cached.initialize(), plain.initialize()]);
    try {
      for (const dataSource of [cached, plain]) {
        for (let i = 0; i < 3; i++) await dataSource.query('SELECT label FROM things WHERE id = $1', [2]);
      }
      const countOf = async (dataSource: DataSource) =>
        Number((await dataSource.query('SELECT count(*) AS n FROM pg_prepared_statements'))[0].n);
      expect([await countOf(cached), await countOf(plain)]).toEqual([1, 0]);
    } finally {
      await Promise.all([cached.destroy(), plain.destroy()]);
    }
  });
});
