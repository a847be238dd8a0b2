import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, HOLD, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { ServiceProcess, startService } from '../support/service-process';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';
import { Receiver } from '../support/webhook-receiver';

/**
 * `npm run backup` and `npm run restore` (scripts/backup.sh, scripts/restore.sh) as an admin
 * runs them: the backup is taken from a live instance (this test's API-only app and a worker
 * process) while executions are running and queued, restored into a fresh database on the same
 * server, and a service process started on it with the same SECRETS_KEY and JWT_SECRET.
 * Needs pg_dump, pg_restore and psql of the server's major version or newer on the PATH.
 */
const SECRETS_KEY = randomBytes(32).toString('hex');
const ENV = { SECRETS_KEY, OUTBOUND_ALLOWLIST: '127.0.0.1' };
/** The http plugin's sealed secret: the remote agent echoes the Authorization header it got. */
const AUTHORIZATION = `Bearer ${randomBytes(24).toString('hex')}`;
/** Long enough that no held call times out before the backup is taken. */
const AGENT_TIMEOUT_MS = 10_000;

jest.setTimeout(180_000);

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run <script> -- <args>` from the repository root, with `DATABASE_URL` as given (unset when undefined). */
function npmRun(
  script: 'backup' | 'restore',
  args: string[],
  databaseUrl: string | undefined,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<Exit> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', ...extraEnv };
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const child = spawn('npm', ['run', '--silent', script, '--', ...args], { cwd: join(__dirname, '../..'), env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `fn` with a client on the database `url` names. */
async function onDatabase<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe('backup and restore (npm run backup / npm run restore)', () => {
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL!;
  const databases: string[] = [];
  const services: ServiceProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'platform-backup-'));
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let holding = false;
  const receiver = new Receiver();
  let endpoint: { id: string; secret: string };

  /** A new empty database on the test server, dropped after the tests; answers its URL. */
  async function freshDatabase(suffix: string): Promise<string> {
    const name = `${process.env.TEST_DATABASE_NAME}_${suffix}`;
    await onDatabase(serverUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
    databases.push(name);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return url.toString();
  }

  beforeAll(async () => {
    // Answers with the call's key and Authorization header, or holds the call while `holding`.
    remote = await startFakeRemoteAgent({
      '/agent': (call) => (holding ? HOLD : { body: { key: call.key, authorization: call.headers.authorization ?? null } }),
    });
    await receiver.start();
    t = await createTestApp({ env: { APP_ROLE: 'api', ...ENV } });
    org = await t.newOrg('team');
    await install(t, org, 'http', { authorization: AUTHORIZATION, origins: [remote.url] });
    await install(t, org, 'transform');
    const res = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: receiver.url('/hooks'), eventTypes: ['agent.execution.*'] });
    expect(res.status).toBe(201);
    endpoint = { id: res.body.id as string, secret: res.body.secret as string };
  });

  afterAll(async () => {
    holding = false;
    await Promise.all(services.map((s) => s.kill()));
    await t?.close();
    await remote?.close();
    await receiver.close();
    for (const name of databases) {
      await onDatabase(serverUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('restores a live instance: finished executions, readable secrets, and work in flight finishes', async () => {
    // The organization may have one execution in flight: the first holds it, the rest queue.
    const worker = await startService({ APP_ROLE: 'worker', WORKER_CONCURRENCY: '1', ORG_MAX_EXECUTIONS: '1', ...ENV });
    services.push(worker);
    const httpAgent = await registerAgent(t, org, {
      kind: 'http.agent',
      config: { url: `${remote.url}/agent` },
      timeoutMs: AGENT_TIMEOUT_MS,
    });
    const transformAgent = await registerAgent(t, org, { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } });

    // Finished before the backup: their history as the instance shows it.
    const finished: Array<{ agentId: string; body: Record<string, unknown> }> = [];
    for (const [agentId, input] of [
      [httpAgent, { n: 1 }],
      [httpAgent, { n: 2 }],
      [transformAgent, { text: 'one' }],
      [transformAgent, { text: 'two' }],
    ] as const) {
      const res = await t.http().post(`/api/agents/${agentId}/execute?wait=20`).set(bearer(org.member)).send({ input });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
      const history = await t.http().get(`/api/agents/${agentId}/history/${res.body.id}`).set(bearer(org.viewer));
      finished.push({ agentId, body: history.body as Record<string, unknown> });
    }
    expect(finished.map((f) => f.body.output)).toEqual([
      { key: finished[0].body.id, authorization: AUTHORIZATION },
      { key: finished[1].body.id, authorization: AUTHORIZATION },
      'ONE',
      'TWO',
    ]);

    // In flight: the worker holds the call of the first (the organization's one slot); the rest wait in the queue.
    holding = true;
    const execute = async (i: number) => {
      const res = await t.http().post(`/api/agents/${httpAgent}/execute?wait=0`).set(bearer(org.member)).send({ input: { i } });
      expect(res.status).toBe(202);
      return res.body.id as string;
    };
    const inFlight = [await execute(0)];
    await remote.callsInFlight();
    for (let i = 1; i < 20; i++) inFlight.push(await execute(i));

    const file = join(dir, 'platform.dump');
    const backup = await npmRun('backup', [file], process.env.DATABASE_URL);
    expect(backup).toMatchObject({ code: 0, stderr: '' });
    expect(backup.stdout).toMatch(/^backup: wrote .*platform\.dump \(.+, \d+ tables in schemas pgboss, public\)\n$/);
    // The original instance is gone for good: its worker dies with the calls it held.
    await worker.kill();
    holding = false;
    remote.dropHeld();

    const restoredUrl = await freshDatabase('restored');
    const restore = await npmRun('restore', [file], restoredUrl);
    expect(restore).toMatchObject({ code: 0, stderr: '' });
    expect(restore.stdout).toMatch(/^restore: restored .*platform\.dump into database '.+_restored'\n$/);

    // The backup caught executions running (their jobs held by the worker) and still queued.
    const atBackup = await onDatabase(restoredUrl, async (db) => {
      const { rows } = await db.query<{ status: string; count: number }>(
        'SELECT status, count(*)::int AS count FROM agent_executions WHERE id = ANY($1::uuid[]) GROUP BY status',
        [inFlight],
      );
      return Object.fromEntries(rows.map((r) => [r.status, r.count]));
    });
    expect(atBackup).toEqual({ running: 1, queued: inFlight.length - 1 });

    // The old worker is dead: every delivery from now on comes from the restored instance.
    const since = Date.now();
    const restored = await startService({ APP_ROLE: 'all', ...ENV, JWT_SECRET: process.env.JWT_SECRET!, DATABASE_URL: restoredUrl });
    services.push(restored);
    // Tokens the old instance signed still pass: the users and JWT_SECRET are the same.
    const api = async (method: 'GET' | 'POST', path: string, as = org.viewer) => {
      const res = await fetch(`http://127.0.0.1:${restored.port}${path}`, { method, headers: bearer(as) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    for (const { agentId, body } of finished) {
      expect(await api('GET', `/api/agents/${agentId}/history/${body.id as string}`)).toEqual({ status: 200, body });
    }

    // Unfinished at backup time: resumed on the restored instance, through the sealed plugin secret.
    let left = inFlight.length;
    await eventually(
      () =>
        onDatabase(restoredUrl, async (db) => {
          const { rows } = await db.query<{ count: number }>(
            "SELECT count(*)::int AS count FROM agent_executions WHERE id = ANY($1::uuid[]) AND status IN ('queued', 'running')",
            [inFlight],
          );
          left = rows[0].count;
          return left === 0;
        }),
      { timeoutMs: 90_000, intervalMs: 500, message: () => `${inFlight.length} executions to finish (${left} unfinished)` },
    );
    for (const id of inFlight) {
      expect(await api('GET', `/api/agents/${httpAgent}/history/${id}`)).toMatchObject({
        status: 200,
        body: { id, status: 'succeeded', output: { key: id, authorization: AUTHORIZATION } },
      });
    }

    // The endpoint's sealed secret signs: every resumed execution's event, and a test event.
    const webhook = new Webhook(endpoint.secret);
    const verified = (type: string) =>
      receiver
        .on('/hooks')
        .filter((d) => d.at >= since)
        .map((d) => {
          const payload = webhook.verify(d.body, d.headers as Record<string, string>) as { type: string; data: { id: string } };
          return payload.type === type ? payload.data.id : null;
        })
        .filter((id) => id !== null);
    await eventually(() => inFlight.every((id) => verified('agent.execution.succeeded').includes(id)), {
      timeoutMs: 30_000,
      intervalMs: 250,
      message: 'a signed agent.execution.succeeded delivery of every resumed execution',
    });
    const test = await api('POST', `/api/webhooks/${endpoint.id}/test`, org.admin);
    expect(test.status).toBe(200);
    expect(verified('webhook.test')).toHaveLength(1);
  });

  it('refuses without DATABASE_URL and into a database with tables unless --clean', async () => {
    const file = join(dir, 'refusals.dump');
    const noUrl = await npmRun('backup', [file], undefined);
    expect(noUrl).toEqual({
      code: 2,
      stdout: '',
      stderr: 'backup: DATABASE_URL is not set (embedded mode: stop the service and copy its data folder instead)\n',
    });
    expect(existsSync(file)).toBe(false);
    expect(await npmRun('restore', [file], undefined)).toEqual({
      code: 2,
      stdout: '',
      stderr: 'restore: DATABASE_URL is not set: name the database to restore into\n',
    });

    expect(await npmRun('backup', [file], process.env.DATABASE_URL)).toMatchObject({ code: 0, stderr: '' });
    expect((await npmRun('backup', [file], process.env.DATABASE_URL)).code).toBe(2);
    const target = await freshDatabase('target');
    expect((await npmRun('restore', [file], target)).code).toBe(0);
    const orgName = (db: Client) =>
      db.query<{ name: string }>('SELECT name FROM organizations WHERE id = $1', [org.id]).then((r) => r.rows[0]?.name);
    await onDatabase(target, (db) => db.query("UPDATE organizations SET name = 'changed since the backup' WHERE id = $1", [org.id]));

    const refused = await npmRun('restore', [file], target);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^restore: database '.+_target' already has \d+ tables; restore into an empty database, or pass --clean to replace what the backup holds\n$/,
    );
    expect(await onDatabase(target, orgName)).toBe('changed since the backup');

    const clean = await npmRun('restore', ['--clean', file], target);
    expect(clean).toMatchObject({ code: 0, stderr: '' });
    expect(await onDatabase(target, orgName)).toBe(org.slug);
  });

  /**
   * What `ps` shows of a process is its argv: pg_dump, pg_restore and psql are wrapped by
   * scripts first on the PATH that record their argv and PGPASSWORD, then run the real tool.
   * The URL carries its own password or, without one, PGPASSWORD's or a made-up one (a server
   * that trusts the connection ignores it), percent-encoded: it holds @ : / % & and a space.
   */
  it('passes the password in PGPASSWORD, never on a command line: argv holds the URL without it', async () => {
    const password = (url: string) => decodeURIComponent(new URL(url).password) || process.env.PGPASSWORD || 'p@ss:w/rd 100% & é';
    const withPassword = (url: string) => {
      const parsed = new URL(url);
      parsed.password = encodeURIComponent(password(url));
      return parsed.toString();
    };
    const withoutPassword = (url: string) => {
      const parsed = new URL(url);
      parsed.password = '';
      return parsed.toString();
    };
    const bin = join(dir, 'bin');
    const log = join(dir, 'tools.log');
    mkdirSync(bin);
    for (const tool of ['pg_dump', 'pg_restore', 'psql']) {
      const real = execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
      // One line per call: the tool, then each argument and PGPASSWORD as the hex of its bytes.
      writeFileSync(
        join(bin, tool),
        [
          '#!/usr/bin/env bash',
          `line=${tool}`,
          'for a in "$@" "PGPASSWORD=${PGPASSWORD-}"; do line+=" $(printf %s "$a" | od -An -tx1 | tr -d \' \\n\')"; done',
          // One write, so that pg_restore and psql of one pipe cannot interleave their lines.
          `printf '%s\\n' "$line" >>'${log}'`,
          `exec '${real}' "$@"`,
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
    }
    const wrapped = { PATH: `${bin}:${process.env.PATH}`, PGPASSWORD: undefined };

    const source = withPassword(process.env.DATABASE_URL!);
    const file = join(dir, 'password.dump');
    expect(await npmRun('backup', [file], source, wrapped)).toMatchObject({ code: 0, stderr: '' });
    const target = withPassword(await freshDatabase('password'));
    expect(await npmRun('restore', [file], target, wrapped)).toMatchObject({ code: 0, stderr: '' });
    expect(await npmRun('restore', ['--clean', file], target, wrapped)).toMatchObject({ code: 0, stderr: '' });

    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        const [tool, ...words] = line.split(' ');
        const args = words.map((word) => Buffer.from(word, 'hex').toString('utf8'));
        return { tool, argv: args.slice(0, -1), environment: args[args.length - 1] };
      });
    expect(new Set(calls.map((c) => c.tool))).toEqual(new Set(['pg_dump', 'pg_restore', 'psql']));
    const secret = password(process.env.DATABASE_URL!);
    for (const { tool, argv, environment } of calls) {
      const line = argv.join(' ');
      expect({ tool, line, leaks: [secret, encodeURIComponent(secret)].some((form) => line.includes(form)) }).toEqual({
        tool,
        line,
        leaks: false,
      });
      const dbname = argv.find((arg) => arg.startsWith('--dbname='));
      if (dbname) {
        expect([withoutPassword(source), withoutPassword(target)]).toContain(dbname.slice('--dbname='.length));
        expect({ tool, environment }).toEqual({ tool, environment: `PGPASSWORD=${secret}` });
      }
    }
    expect(calls.filter((c) => c.argv.some((arg) => arg.startsWith('--dbname=')))).not.toHaveLength(0);
  });
});
