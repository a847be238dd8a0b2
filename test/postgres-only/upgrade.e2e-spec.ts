import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { runMigrationsLocked } from '../../src/database/migrator';
import { issueLicense } from '../../src/modules/licensing/application/license-issuer';
import { FakeRemoteAgent, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { createTestIdp } from '../support/saml-idp';
import { bearer, createTestApp, PASSWORD, TestApp } from '../support/test-app';
import { Row, UpgradeFixture, upgradeFixture } from '../support/upgrade-fixture';
import { Receiver } from '../support/webhook-receiver';

/**
 * Upgrades keep data. There are no release tags, so "the previous version" is a number of
 * migrations back: each upgrade below builds the schema of all but the newest `pending`
 * migrations with TypeORM's runner on a fresh database, fills every table that schema has
 * with the rows of test/support/upgrade-fixture.ts (plain INSERTs of the columns that schema
 * has), runs the rest with the service's own migrator (runMigrationsLocked, as at boot), checks
 * every row against what was written, then boots the service on that database and reads
 * everything back through the API: sign-in with the stored password hashes and refresh token,
 * plugin secrets decrypted (the http plugin's authorization reaches its remote agent), idempotency
 * keys honoured, workflows with their versions and runs with their steps, the license, SAML
 * settings, webhook secrets (a test delivery verifies) and API keys.
 *
 * Two upgrades: from before the newest two migrations (when this was written, before webhooks
 * and API keys: a release that had neither) and from before the newest one alone, which puts
 * every other table, full, under the newest migration. Both move forward with each new one.
 *
 * A new migration fails the first test until it is listed in WRITTEN_FOR. Before listing it:
 * - a new table: add rows for it to the fixture (the test fails naming any table without);
 * - a new column: add it to that table's fixture rows with the value it must hold after the
 *   upgrade (its default: the older schemas do not have it, so the test does not write it);
 * - a changed column (type, rename, data moved): say in the fixture what the upgrade makes of
 *   the old rows, and keep the old name writable if older schemas need it;
 * - a new feature: read one of its rows back through the API below.
 * The fill is generic: a column of an older schema that is NOT NULL without a default and
 * missing from the fixture fails the fill, naming it.
 */
const WRITTEN_FOR = [
  '1795646282020-Initial',
  '1795647276443-PluginInstallations',
  '1795648883358-Agents',
  '1795650867227-Workflows',
  '1795651894650-License',
  '1795652738456-Saml',
  '1795677573178-CredentialsVersion',
  '1795679413468-SeatQuota',
  '1795688002008-Webhooks',
  '1795697757590-ApiKeys',
  '1795700370613-WorkflowSchedules',
  '1795708178671-WorkflowTriggers',
  '1795753813667-Trial',
  '1795760000000-CrossListIndexes',
  '1795770000000-WorkflowWaits',
  '1795780000000-RunRetries',
  '1795782000000-RunConcurrency',
  '1795783000000-WorkflowApprovals',
  '1795790000000-AgentTranscripts',
  '1795795000000-AgentMcpExposure',
  '1795800000000-HistoryPartitions',
  '1795810000000-AuditLog',
  '1795815000000-AuditRetention',
  '1795820000000-OidcSignIn',
  '1795830000000-SamlSpKeys',
  '1795840000000-AuditChainKey',
  '1796195877061-OidcIdentities',
];
const MIGRATIONS_DIR = join(__dirname, '../../src/database/migrations');
const UPGRADES = [{ pending: 2 }, { pending: 1 }];

it('covers every migration: a new one must extend this test', () => {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  const unknown = files.filter((f) => !WRITTEN_FOR.includes(f));
  expect(
    unknown.map((name) => `a new migration ${name}: extend the upgrade test (test/postgres-only/upgrade.e2e-spec.ts, see its header)`),
  ).toEqual([]);
  expect(files).toEqual(WRITTEN_FOR);
});

interface Column {
  type: string;
  required: boolean;
  serial: boolean;
}

/** The tables (a partitioned table once, not its partitions). */
async function tablesOf(db: Client): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    `SELECT c.relname AS table_name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'migrations' ORDER BY 1`,
  );
  return rows.map((r) => r.table_name);
}

async function columnsOf(db: Client, table: string): Promise<Map<string, Column>> {
  const { rows } = await db.query<{ column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
    `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
    [table],
  );
  return new Map(
    rows.map((c) => [
      c.column_name,
      {
        type: c.data_type,
        required: c.is_nullable === 'NO' && c.column_default === null,
        serial: !!c.column_default?.startsWith('nextval('),
      },
    ]),
  );
}

async function primaryKeyOf(db: Client, table: string): Promise<string[]> {
  const { rows } = await db.query<{ attname: string }>(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
    [`"${table}"`],
  );
  return rows.map((r) => r.attname);
}

/** Inserts the fixture rows of every table the database has, only the columns it has; answers the tables filled. */
async function fill(db: Client, fixture: UpgradeFixture, before: string): Promise<string[]> {
  const filled: string[] = [];
  for (const [table, rows] of fixture.tables) {
    const columns = await columnsOf(db, table);
    if (!columns.size) continue;
    for (const row of rows) {
      const missing = [...columns].filter(([name, c]) => c.required && !(name in row)).map(([name]) => name);
      if (missing.length) throw new Error(`The upgrade fixture's ${table} rows lack ${missing.join(', ')}, required before ${before}`);
      const names = Object.keys(row).filter((name) => columns.has(name));
      const values = names.map((name) =>
        columns.get(name)!.type === 'jsonb' && row[name] !== null ? JSON.stringify(row[name]) : row[name],
      );
      await db.query(
        `INSERT INTO "${table}" (${names.map((n) => `"${n}"`).join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
        values,
      );
    }
    // Explicit ids leave a serial's sequence behind; the service's next insert must not collide.
    for (const [name] of [...columns].filter(([, c]) => c.serial)) {
      await db.query(`SELECT setval(pg_get_serial_sequence('"${table}"', '${name}'), max("${name}")) FROM "${table}"`);
    }
    filled.push(table);
  }
  return filled;
}

interface Snapshot {
  primaryKey: string[];
  rows: Map<string, Row>;
}

/** A row's primary key; a timestamp in it as an instant (to_jsonb() writes `+00:00` where the fixture writes `Z`). */
const keyOf = (row: Row, primaryKey: string[]) =>
  primaryKey
    .map((k) => {
      const value = row[k];
      return typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) ? new Date(value).toISOString() : String(value);
    })
    .join('|');

/** Every row of each table as to_jsonb() shows it, by primary key. */
async function snapshot(db: Client, tables: string[]): Promise<Record<string, Snapshot>> {
  const result: Record<string, Snapshot> = {};
  for (const table of tables) {
    const primaryKey = await primaryKeyOf(db, table);
    const { rows } = await db.query<{ row: Row }>(`SELECT to_jsonb(t) AS row FROM "${table}" t`);
    result[table] = { primaryKey, rows: new Map(rows.map(({ row }) => [keyOf(row, primaryKey), row])) };
  }
  return result;
}

/** A fixture value as to_jsonb() shows it: timestamps compared as instants. */
function normalized(value: unknown, column: Column): unknown {
  if (value === null || value === undefined) return null;
  return column.type.startsWith('timestamp') ? new Date(value as string).toISOString() : value;
}

describe.each(UPGRADES)('upgrade from all but the newest $pending migrations', ({ pending }) => {
  const name = `platform_upgrade_${randomBytes(4).toString('hex')}`;
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const url = Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  const secretsKey = randomBytes(32);
  let fixture: UpgradeFixture;
  let pendingNames: string[];
  let filled: string[];
  let before: Record<string, Snapshot>;
  let after: Record<string, Snapshot>;
  let finalTables: string[];
  let finalColumns: Map<string, Map<string, Column>>;
  let applied: string[];
  let remote: FakeRemoteAgent;
  const receiver = new Receiver();

  beforeAll(async () => {
    remote = await startFakeRemoteAgent({
      '/echo': (call) => ({ body: { echo: JSON.parse(call.body), authorization: call.headers.authorization } }),
    });
    await receiver.start();
    fixture = await upgradeFixture({
      secretsKey,
      remoteUrl: remote.url,
      receiverUrl: receiver.url('/hooks'),
      licenseKey: await issueLicense(
        { customer: 'Acme upgrade', tier: 'enterprise', seats: 100, days: 90, maxRateLimitPerMinute: 5000 },
        process.env.TEST_LICENSE_PRIVATE_KEY!,
      ),
      idpCertificate: createTestIdp('acme').certificate,
      password: PASSWORD,
    });

    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();

    // The previous version: TypeORM's runner with all but the newest `pending` migrations.
    const current = new DataSource(dataSourceOptions(url, 2));
    await current.initialize();
    const timestamp = (m: { name?: string }) => Number(/\d+$/.exec(m.name ?? '')![0]);
    const classes = [...current.migrations].sort((a, b) => timestamp(a) - timestamp(b)).map((m) => m.constructor as new () => object);
    const older = classes.slice(0, -pending);
    pendingNames = classes.slice(-pending).map((c) => c.name);
    const previous = new DataSource({ ...dataSourceOptions(url, 2), migrations: older });
    await previous.initialize();
    await previous.runMigrations({ transaction: 'each' });
    await previous.destroy();

    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      filled = await fill(db, fixture, pendingNames[0]);
      before = await snapshot(db, filled);
      // The upgrade, as the service runs it at boot.
      await runMigrationsLocked(current);
      applied = (await current.query<Array<{ name: string }>>('SELECT name FROM migrations ORDER BY id')).map((r) => r.name);
      after = await snapshot(db, filled);
      finalTables = await tablesOf(db);
      finalColumns = new Map();
      for (const table of finalTables) finalColumns.set(table, await columnsOf(db, table));
    } finally {
      await db.end();
      if (current.isInitialized) await current.destroy();
    }
  }, 60_000);

  afterAll(async () => {
    await remote?.close();
    await receiver.close();
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('applies every pending migration once', () => {
    expect(pendingNames).toHaveLength(pending);
    expect(applied.slice(-pending)).toEqual(pendingNames);
    expect(applied).toHaveLength(WRITTEN_FOR.length);
  });

  it('has fixture rows for every table and column of the current schema, and none for anything else', () => {
    const fixtureTables = fixture.tables.map(([table]) => table);
    expect([...fixtureTables].sort()).toEqual(finalTables);
    for (const [table, rows] of fixture.tables) {
      expect({ table, rows: rows.length > 0 }).toEqual({ table, rows: true });
      const unknown = rows.flatMap((row) => Object.keys(row)).filter((c) => !finalColumns.get(table)!.has(c));
      expect({ table, columnsInNoSchema: [...new Set(unknown)] }).toEqual({ table, columnsInNoSchema: [] });
    }
    // The older schema had tables to fill: the upgrade ran over data.
    expect(filled.length).toBeGreaterThan(10);
  });

  it('keeps every row written before the upgrade, with every value as written', () => {
    for (const table of filled) {
      const rows = fixture.tables.find(([t]) => t === table)![1];
      const columns = finalColumns.get(table)!;
      const { primaryKey, rows: read } = after[table];
      expect({ table, rows: read.size }).toEqual({ table, rows: rows.length });
      // Nothing the old schema held changed (found by the new primary key, which may hold more columns)...
      for (const old of before[table].rows.values())
        expect({ table, row: read.get(keyOf(old, primaryKey)) }).toEqual({ table, row: expect.objectContaining(old) });
      // ...and each row reads back as the fixture wrote it, columns added by the upgrade holding what the fixture says.
      // Keys compared as values: a timestamp in a primary key (audit_events') reads back as another spelling of its instant.
      const keyAsValue = (source: Row) => primaryKey.map((k) => String(normalized(source[k], columns.get(k)!))).join('|');
      for (const row of rows) {
        const stored = [...read.values()].find((r) => keyAsValue(r) === keyAsValue(row)) ?? {};
        const columnsOfRow = Object.keys(row);
        const as = (source: Row) => Object.fromEntries(columnsOfRow.map((c) => [c, normalized(source[c], columns.get(c)!)]));
        expect({ table, row: as(stored) }).toEqual({ table, row: as(row) });
      }
    }
  });

  describe('through the API of the upgraded service', () => {
    let t: TestApp;
    let token: string;
    const had = (table: string) => filled.includes(table);

    beforeAll(async () => {
      t = await createTestApp({
        env: { DATABASE_URL: url, SECRETS_KEY: secretsKey.toString('hex'), LICENSE_KEY: '', OUTBOUND_ALLOWLIST: '127.0.0.1' },
      });
      const login = await t.http().post('/api/auth/login').send({ email: 'ada@acme.test', password: PASSWORD });
      expect(login.status).toBe(200);
      token = login.body.accessToken;
    }, 60_000);
    afterAll(async () => {
      await t?.close();
    });

    const get = (path: string, credential = token) =>
      t
        .http()
        .get(path)
        .set(bearer({ token: credential }));

    it('signs in with the stored password hashes and refresh token, and refuses the disabled user', async () => {
      const member = await t.http().post('/api/auth/login').send({ email: 'max@acme.test', password: PASSWORD });
      expect(member.status).toBe(200);
      const disabled = await t.http().post('/api/auth/login').send({ email: 'vic@acme.test', password: PASSWORD });
      expect(disabled.status).toBe(401);
      const refreshed = await t.http().post('/api/auth/refresh').send({ refreshToken: fixture.secrets.refreshToken });
      expect(refreshed.status).toBe(200);
      const me = await get('/api/auth/me');
      expect(me.body).toMatchObject({
        user: { id: fixture.ids.admin, email: 'ada@acme.test', role: 'admin', isOperator: true },
        organization: { id: fixture.ids.acme, slug: 'acme', name: 'Acme Corp', tier: 'enterprise' },
      });
    });

    it('shows the organizations and users', async () => {
      const globex = await get(`/api/organizations/${fixture.ids.globex}`);
      expect(globex.body).toMatchObject({ id: fixture.ids.globex, slug: 'globex', name: 'Globex', tier: 'starter' });
      const current = await get('/api/organizations/current');
      expect(current.body).toMatchObject({ slug: 'acme', seatQuota: 25 });
      const users = await get('/api/users?limit=100');
      expect(users.status).toBe(200);
      expect(users.body.data.map((u: { email: string }) => u.email).sort()).toEqual(['ada@acme.test', 'max@acme.test', 'vic@acme.test']);
      expect(users.body.data.find((u: { email: string }) => u.email === 'ada@acme.test')).toMatchObject({
        firstName: 'Ada',
        lastName: 'Lovelace',
      });
    });

    it('decrypts the plugin secrets: shown masked, sent to the remote agent', async () => {
      const http = await get('/api/plugins/http');
      expect(http.status).toBe(200);
      expect(http.body.config).toEqual({ origins: [remote.url], authorization: '********' });
      const res = await t
        .http()
        .post(`/api/agents/${fixture.ids.httpAgent}/execute?wait=20`)
        .set(bearer({ token }))
        .send({ input: { ping: 2 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'succeeded', output: { echo: { ping: 2 }, authorization: fixture.secrets.httpSecret } });
    });

    it('shows the agents and their executions, and honours a stored idempotency key', async () => {
      const agents = await get('/api/agents');
      expect(agents.body.data.map((a: { name: string }) => a.name).sort()).toEqual(['Echo', 'Upper']);
      // Agents from before MCP exposure are not served at /api/mcp.
      expect(agents.body.data.map((a: { mcp: unknown }) => a.mcp)).toEqual([null, null]);
      const done = await get(`/api/agents/${fixture.ids.upperAgent}/history/${fixture.ids.upperExecution}`);
      expect(done.body).toMatchObject({ id: fixture.ids.upperExecution, status: 'succeeded', input: { text: 'hi' }, output: 'HI' });
      // The fixture's journal reads back as its conversation where the schema had its table
      // (AgentTranscripts not pending); an execution from before tool-calling agents has none.
      const journalled = !pendingNames.some((name) => name.startsWith('AgentTranscripts'));
      expect(done.body.conversation).toEqual(journalled ? expect.objectContaining({ turns: 1, toolCalls: 1 }) : null);
      const failed = await get(`/api/agents/${fixture.ids.httpAgent}/history/${fixture.ids.failedExecution}`);
      expect(failed.body).toMatchObject({ status: 'failed', error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 500' } });
      // An execution from before retries is retried with its stored input.
      const retried = await t
        .http()
        .post(`/api/agents/${fixture.ids.httpAgent}/history/${fixture.ids.failedExecution}/retry?wait=20`)
        .set(bearer({ token }));
      expect(retried.body).toMatchObject({ status: 'succeeded', output: { echo: { ping: 1 } }, retryOf: fixture.ids.failedExecution });
      expect((await get(`/api/agents/${fixture.ids.httpAgent}/history/${fixture.ids.failedExecution}`)).body.retriedBy).toBe(
        retried.body.id,
      );
      const again = await t
        .http()
        .post(`/api/agents/${fixture.ids.upperAgent}/execute`)
        .set(bearer({ token }))
        .set('Idempotency-Key', 'order-1001')
        .send({ input: { text: 'hi' } });
      expect(again.body).toMatchObject({ id: fixture.ids.upperExecution, output: 'HI' });
    });

    it('shows the workflow with its versions and the run with its steps', async () => {
      const workflow = await get(`/api/workflows/${fixture.ids.workflow}`);
      expect(workflow.body).toMatchObject({ id: fixture.ids.workflow, name: 'shout', version: 2 });
      const versions = await get(`/api/workflows/${fixture.ids.workflow}/versions`);
      expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([2, 1]);
      const run = await get(`/api/workflows/${fixture.ids.workflow}/runs/${fixture.ids.run}`);
      expect(run.body).toMatchObject({ id: fixture.ids.run, status: 'succeeded', workflowVersion: 1, output: { upper: 'YO' } });
      expect(run.body.parentRunId).toBeNull();
      expect(run.body.concurrency).toBeNull();
      expect(run.body.steps).toEqual([
        expect.objectContaining({ id: 'upper', status: 'succeeded', output: 'YO', resumeAt: null, reason: null, childRunId: null }),
      ]);
      expect(run.body).toMatchObject({ parentRunId: null, retryOf: null, retriedBy: null });
      // A run from before retries is retried from its step, on its own version.
      const retried = await t
        .http()
        .post(`/api/workflows/${fixture.ids.workflow}/runs/${fixture.ids.run}/retry?wait=20`)
        .set(bearer({ token }))
        .send({ fromStep: 'upper' });
      expect(retried.body).toMatchObject({ status: 'succeeded', workflowVersion: 1, output: { upper: 'YO' }, retryOf: fixture.ids.run });
    });

    it('keeps the license and the SAML settings', async () => {
      const license = await get('/api/license');
      expect(license.body).toMatchObject({ status: 'valid', customer: 'Acme upgrade', tier: 'enterprise', seats: 100 });
      const saml = await get('/api/auth/saml');
      expect(saml.status).toBe(200);
      expect(saml.body).toMatchObject(fixture.samlSettings);
      // Settings saved before single logout, encryption and IdP-initiated sign-in read with those off.
      expect(saml.body).toMatchObject({ idpSloUrl: null, wantAssertionsEncrypted: false, allowIdpInitiated: false });
    });

    it('keeps the SAML SP key pair (or makes the first one when the old schema had none)', async () => {
      const keys = await get('/api/auth/saml/sp-keys');
      expect(keys.status).toBe(200);
      expect(keys.body.data).toEqual([expect.objectContaining({ current: true, retireAt: null })]);
      if (had('saml_sp_keys')) expect(keys.body.data[0].id).toBe(fixture.ids.spKey);
    });

    it('keeps the OIDC settings, the client secret still sealed (or has none when the old schema had none)', async () => {
      const oidc = await get('/api/auth/oidc');
      if (!had('oidc_settings')) {
        expect({ status: oidc.status, code: oidc.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
        return;
      }
      expect(oidc.status).toBe(200);
      expect(oidc.body).toMatchObject({ ...fixture.oidcSettings, clientSecretSet: true });
      expect(JSON.stringify(oidc.body)).not.toContain('acme-oidc-client-secret');
    });

    it('signs with the stored webhook secret (or starts with no endpoints when the old schema had none)', async () => {
      if (!had('webhook_endpoints')) {
        expect((await get('/api/webhooks')).body.data).toEqual([]);
        return;
      }
      const endpoint = await get(`/api/webhooks/${fixture.ids.endpoint}`);
      expect(endpoint.body).toMatchObject({
        url: receiver.url('/hooks'),
        eventTypes: ['agent.execution.*', 'webhook.test'],
        enabled: true,
      });
      const log = await get(`/api/webhooks/${fixture.ids.endpoint}/deliveries/${fixture.ids.message}`);
      expect(log.body).toMatchObject({
        id: fixture.ids.message,
        status: 'succeeded',
        attempts: 1,
        payload: { type: 'agent.execution.succeeded', data: { id: fixture.ids.upperExecution } },
        attemptLog: [expect.objectContaining({ statusCode: 204 })],
      });
      const sent = await t.http().post(`/api/webhooks/${fixture.ids.endpoint}/test`).set(bearer({ token })).send({});
      expect(sent.status).toBe(200);
      // Every delivery verifies with the secret sealed before the upgrade: the test event and
      // those of the executions the specs above finished.
      const webhook = new Webhook(fixture.secrets.signingSecret);
      const types = receiver
        .on('/hooks')
        .map((d) => (webhook.verify(d.body, d.headers as Record<string, string>) as { type: string }).type);
      expect(types).toContain('webhook.test');
    });

    it('authenticates with the stored API keys (or starts with none when the old schema had none)', async () => {
      if (!had('api_keys')) {
        expect((await get('/api/service-accounts')).body.data).toEqual([]);
        return;
      }
      const asService = await get('/api/agents', fixture.secrets.serviceKey);
      expect(asService.status).toBe(200);
      expect(asService.body.data).toHaveLength(2);
      // The admin's personal key acts as the admin: it reads the organization's users.
      const asPerson = await get('/api/users', fixture.secrets.personalKey);
      expect(asPerson.status).toBe(200);
      expect(asPerson.body.data.map((u: { id: string }) => u.id)).toContain(fixture.ids.admin);
    });

    it('keeps the schedules (or starts with none when the old schema had none)', async () => {
      const path = `/api/workflows/${fixture.ids.workflow}/schedules`;
      if (!had('workflow_schedules')) {
        expect((await get(path)).body.data).toEqual([]);
        return;
      }
      const res = await get(`${path}/${fixture.ids.schedule}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        cron: '30 2 * * *',
        timezone: 'Europe/Berlin',
        input: { n: 5 },
        enabled: false,
        nextFireAt: null,
        recent: [{ outcome: 'started', runId: fixture.ids.run }],
      });
    });

    it('keeps the webhook triggers, their events and their tokens (or starts with none)', async () => {
      const path = `/api/workflows/${fixture.ids.workflow}/triggers`;
      if (!had('workflow_triggers')) {
        expect((await get(path)).body.data).toEqual([]);
        return;
      }
      const res = await get(`${path}/${fixture.ids.trigger}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ scheme: 'bearer', mapping: '{ "n": body.count }', enabled: true });
      expect(res.body.secret).toBeUndefined();
      const events = await get(`${path}/${fixture.ids.trigger}/events`);
      expect(events.body.data).toEqual([expect.objectContaining({ id: fixture.ids.triggerEvent, runId: fixture.ids.run })]);
      // The sealed token still opens: a repeated delivery answers the recorded run.
      const hook = await t
        .http()
        .post(`/api/hooks/${fixture.ids.trigger}`)
        .set({ Authorization: `Bearer ${fixture.secrets.triggerToken}`, 'Idempotency-Key': 'crm-delivery-1' })
        .send({ count: 5 });
      expect(hook.status).toBe(202);
      expect(hook.body).toMatchObject({ runId: fixture.ids.run, duplicate: true });
    });
  });
});
