import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { eventually } from './support/eventually';
import { ServiceProcess, startService } from './support/service-process';
import { Receiver } from './support/webhook-receiver';

const ROOT = join(__dirname, '..');
const SCRIPT = join(ROOT, 'examples/walkthrough.sh');
const CHECK = join(ROOT, 'scripts/check-walkthrough.mjs');
const ADMIN = { email: 'newcomer@walkthrough.test', password: 'walkthrough admin password' };

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end and collects what it wrote. */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  // The node that runs the tests comes first on PATH: the script's `json` helper uses `node`.
  const path = [dirname(process.execPath), process.env.PATH].join(delimiter);
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, PATH: path, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) =>
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }),
    );
  });
}

describe('the walkthrough of docs/getting-started.md is examples/walkthrough.sh', () => {
  let scratch: string;
  beforeAll(() => (scratch = mkdtempSync(join(tmpdir(), 'platform-walkthrough-check-'))));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("shows each of the script's blocks verbatim (npm run lint checks it too)", async () => {
    const check = await run(process.execPath, [CHECK]);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    const readme = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8');
    for (const name of ['setup', 'sign-in', 'install-plugin', 'agent', 'workflow', 'runs', 'webhook']) {
      expect(readme).toContain(`<!-- walkthrough:${name} -->\n\`\`\`bash\n`);
    }
  });

  it('fails when a block of the page drifts from the script, or a block of the script is missing', async () => {
    const readme = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8');
    const drifted = join(scratch, 'drifted.md');
    writeFileSync(drifted, readme.replace('"name":"shout"', '"name":"yell"'));
    const check = await run(process.execPath, [CHECK, drifted, SCRIPT]);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('drifted.md block walkthrough:agent differs from the script');

    const missing = join(scratch, 'missing.md');
    writeFileSync(missing, readme.replaceAll('<!-- walkthrough:runs -->', ''));
    const again = await run(process.execPath, [CHECK, missing, SCRIPT]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`the script's block "runs" is not in missing.md`);

    // --write puts the script's blocks back, and the copy passes again.
    const write = await run(process.execPath, [CHECK, '--write', drifted, SCRIPT]);
    expect(write.code).toBe(0);
    expect(readFileSync(drifted, 'utf8')).toBe(readme);
  });
});

describe('examples/walkthrough.sh against a fresh service', () => {
  let service: ServiceProcess | undefined;
  let dataDir: string;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    dataDir = mkdtempSync(join(tmpdir(), 'platform-walkthrough-'));
    // As `npm start` runs it: its own embedded PGlite in a new DATA_DIR, generated secrets, no
    // license (so the starter tier), the admin's password from ADMIN_PASSWORD. Only the
    // receiver's loopback address is let through the SSRF guard.
    service = await startService(
      {
        DATABASE_URL: '',
        DATA_DIR: dataDir,
        JWT_SECRET: '',
        SECRETS_KEY: '',
        LICENSE_KEY: '',
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        OUTBOUND_ALLOWLIST: '127.0.0.1',
      },
      { readyTimeoutMs: 150_000 },
    );
  }, 180_000);

  afterAll(async () => {
    await service?.kill('SIGTERM');
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const walkthrough = () =>
    run('bash', [SCRIPT], {
      PLATFORM_URL: `http://127.0.0.1:${service!.port}`,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      WEBHOOK_URL: receiver.url('/walkthrough'),
    });

  it('runs every block on the starter tier and skips the webhook', async () => {
    const { code, stdout, stderr } = await walkthrough();
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const lines = stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([ADMIN.email, 'starter']);
    expect(lines).toEqual(expect.arrayContaining(['transform', 'transform.jsonata', 'succeeded', '{"message":"HELLO ADA!"}']));
    expect(stdout).toMatch(/"status":"succeeded","input":\{"text":"hi"\},"output":"HI"/);
    expect(stdout).toMatch(/"id":"shout","status":"succeeded".*"id":"punctuate","status":"succeeded"/);
    expect(stdout).toContain('The starter tier has no webhooks (Team and Enterprise do): skipping');
    expect(lines.at(-2)).toBe('walkthrough done');
    expect(receiver.received).toEqual([]);
  }, 60_000);

  it('adds the webhook and sends it a test event once the tier has webhooks', async () => {
    const base = `http://127.0.0.1:${service!.port}`;
    const login = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const { accessToken } = (await login.json()) as { accessToken: string };
    // The test suite's enterprise license: applied to an installation of one organization, it raises it.
    const license = await fetch(`${base}/api/license`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ key: process.env.LICENSE_KEY }),
    });
    expect(license.status).toBe(200);

    const { code, stdout, stderr } = await walkthrough();
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('{"message":"HELLO ADA!"}');
    expect(stdout).toMatch(/^whsec_\S+$/m);
    expect(stdout).not.toContain('skipping');
    const [test] = await eventually(() => receiver.on('/walkthrough').length > 0 && receiver.on('/walkthrough'), {
      message: 'the webhook test event',
    });
    expect(JSON.parse(test.body)).toMatchObject({ type: 'webhook.test' });
    expect(test.headers['webhook-signature']).toMatch(/^v1,/);
  }, 60_000);
});
