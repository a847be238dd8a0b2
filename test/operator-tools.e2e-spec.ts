import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { entryPoint, startService } from './support/service-process';
import { createTestApp } from './support/test-app';

const run = promisify(execFile);
const CLI = entryPoint('cli');
const root = join(__dirname, '..');

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  return run(CLI[0], [...CLI.slice(1), ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', ...env },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('cli user:reset-password', () => {
  const slug = `reset-${Date.now().toString(36)}`;
  const email = `admin@${slug}.example`;

  it('sets a new password: it signs in, the old one and the old sessions no longer do; an unknown email fails', async () => {
    const created = await cli([
      'org:create',
      '--slug',
      slug,
      '--name',
      'Reset',
      '--admin-email',
      email,
      '--admin-password',
      'the old long password',
    ]);
    expect(created.code).toBe(0);
    const t = await createTestApp();
    try {
      const before = await t.http().post('/api/auth/login').send({ email, password: 'the old long password' });
      expect(before.status).toBe(200);

      const chosen = await cli(['user:reset-password', email.toUpperCase()], { NEW_PASSWORD: 'the chosen new password' });
      expect(chosen).toEqual({ code: 0, stdout: '', stderr: expect.stringContaining(`Password of ${email} changed`) });
      expect((await t.http().post('/api/auth/login').send({ email, password: 'the old long password' })).status).toBe(401);
      expect((await t.http().post('/api/auth/login').send({ email, password: 'the chosen new password' })).status).toBe(200);
      // The sessions of before are ended, as by a password change through the API.
      const me = await t.http().get('/api/auth/me').set('Authorization', `Bearer ${before.body.accessToken}`);
      expect(me.status).toBe(401);

      // Without NEW_PASSWORD one is generated and printed alone on its line.
      const generated = await cli(['user:reset-password', email], { NEW_PASSWORD: undefined });
      expect(generated.code).toBe(0);
      const password = generated.stdout.trim();
      expect(generated.stdout).toBe(`${password}\n`);
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect((await t.http().post('/api/auth/login').send({ email, password: 'the chosen new password' })).status).toBe(401);
      expect((await t.http().post('/api/auth/login').send({ email, password })).status).toBe(200);
    } finally {
      await t.close();
    }

    // The refusals change nothing, so they run side by side.
    const [unknown, short, none] = await Promise.all([
      cli(['user:reset-password', `nobody@${slug}.example`], { NEW_PASSWORD: 'a long enough password' }),
      // The API's rules: at least 12 characters.
      cli(['user:reset-password', email], { NEW_PASSWORD: 'short' }),
      cli(['user:reset-password']),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('USER_NOT_FOUND');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('NEW_PASSWORD');
    expect(none.code).toBe(2);
  }, 180_000);
});

describe('GET /', () => {
  it('redirects to the API docs, whose error codes are a page of their own', async () => {
    const t = await createTestApp();
    try {
      const res = await t.http().get('/');
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/api/docs');
      // Out of the API's description: the Swagger page opens with the endpoints; the error codes have their own page.
      const document = (await t.http().get('/api/docs-json')).body as { info: { description: string }; paths: Record<string, unknown> };
      expect(document.paths['/']).toBeUndefined();
      expect(document.info.description).not.toContain('VALIDATION_FAILED');
      expect(document.info.description).toContain('/api/docs/errors');
      const errors = await t.http().get('/api/docs/errors');
      expect(errors.status).toBe(200);
      expect(errors.headers['content-type']).toMatch(/^text\/html/);
      expect(errors.text).toContain('<code>VALIDATION_FAILED</code>');
    } finally {
      await t.close();
    }
  });
});

describe('embedded data folder held by a running service', () => {
  it('is refused by the CLI; a restart says an ADMIN_PASSWORD is ignored; route mappings stay out of the info log', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'platform-held-'));
    // No DATABASE_URL: embedded PGlite in DATA_DIR, the service's and the CLI's.
    const env = { DATABASE_URL: undefined, DATA_DIR: dataDir, ADMIN_EMAIL: 'root@held.test', SHUTDOWN_DRAIN_MS: '0' };
    const slug = 'held-folder';
    const create = [
      'org:create',
      '--slug',
      slug,
      '--name',
      'Held',
      '--admin-email',
      'x@held.test',
      '--admin-password',
      'a long cli password',
    ];
    try {
      let service = await startService({ ...env, LOG_LEVEL: 'info' } as unknown as Record<string, string>, {
        captureOutput: true,
        readyTimeoutMs: 90_000,
      });
      try {
        expect(existsSync(join(dataDir, 'pglite.lock'))).toBe(true);
        const refused = await cli(create, env);
        expect(refused.code).toBe(1);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toContain(`A service is running on the embedded database in ${dataDir}`);
        expect(refused.stderr).toContain('use the API, or stop the service first');
        const reset = await cli(['user:reset-password', 'root@held.test'], env);
        expect(reset.code).toBe(1);
        expect(reset.stderr).toContain('A service is running');
        expect(service.alive()).toBe(true);
      } finally {
        await service.kill('SIGTERM');
      }
      const first = service.output();
      expect(first).toMatch(/Generated password for root@held\.test: \S+/);
      expect(first).not.toContain('RouterExplorer');
      expect(first).not.toContain('Mapped {');
      expect(existsSync(join(dataDir, 'pglite.lock'))).toBe(false);

      // The refused write did not happen: with the service stopped the same slug is free.
      const created = await cli(create, env);
      expect(created.stderr).toBe('');
      expect(created.code).toBe(0);
      expect(JSON.parse(created.stdout)).toMatchObject({ slug });

      service = await startService(
        { ...env, LOG_LEVEL: 'warn', ADMIN_PASSWORD: 'a password set too late' } as unknown as Record<string, string>,
        {
          captureOutput: true,
          readyTimeoutMs: 90_000,
        },
      );
      await service.kill('SIGTERM');
      expect(service.output()).toContain(
        'ADMIN_PASSWORD is ignored: the admin root@held.test already exists. To change its password run ' +
          '`npm run cli -- user:reset-password root@held.test`, or PATCH /api/users/:id as a signed-in admin',
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
