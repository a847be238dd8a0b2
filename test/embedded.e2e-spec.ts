import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp } from './support/test-app';

/** Folders and files under `root` that another OS user could enter or read (anything but 0700 and 0600). */
function notPrivate(root: string): string[] {
  const names = ['.', ...(readdirSync(root, { recursive: true }) as string[])];
  return names.flatMap((name) => {
    const stat = lstatSync(join(root, name));
    const mode = stat.mode & 0o777;
    return mode === (stat.isDirectory() ? 0o700 : 0o600) ? [] : [`${name} ${mode.toString(8)}`];
  });
}

describe('embedded mode', () => {
  it('starts with no DATABASE_URL on PGlite in DATA_DIR and answers login', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'platform-embedded-'));
    const env = {
      DATABASE_URL: undefined,
      JWT_SECRET: undefined,
      DATA_DIR: dataDir,
      ADMIN_EMAIL: 'root@embedded.test',
      ADMIN_PASSWORD: 'embedded admin password',
      // Unlicensed, as a fresh installation is.
      LICENSE_KEY: undefined,
    };
    const t = await createTestApp({ env });
    try {
      const login = await t.http().post('/api/auth/login').send({ email: 'root@embedded.test', password: 'embedded admin password' });
      expect(login.status).toBe(200);
      const me = await t.http().get('/api/auth/me').set('Authorization', `Bearer ${login.body.accessToken}`);
      expect(me.body).toMatchObject({ user: { role: 'admin', isOperator: true }, organization: { slug: 'default', tier: 'starter' } });
      expect(readFileSync(join(dataDir, 'jwt-secret'), 'utf8').length).toBeGreaterThanOrEqual(32);
      // The database's files (password hashes in pg_authid and the WAL) are this OS user's alone.
      expect(statSync(join(dataDir, 'pglite')).mode & 0o777).toBe(0o700);
      expect(notPrivate(join(dataDir, 'pglite'))).toEqual([]);
    } finally {
      await t.close();
    }
    // A restart keeps the data and the generated secret: the admin still signs in. With a
    // LICENSE_KEY now, the installation's one organization is raised to the licensed tier.
    let afterStop: string[];
    const again = await createTestApp({
      env: { ...env, ADMIN_PASSWORD: 'ignored once bootstrapped', LICENSE_KEY: process.env.LICENSE_KEY },
    });
    try {
      const login = await again.http().post('/api/auth/login').send({ email: 'root@embedded.test', password: 'embedded admin password' });
      expect(login.status).toBe(200);
      const me = await again.http().get('/api/auth/me').set('Authorization', `Bearer ${login.body.accessToken}`);
      expect(me.body.organization).toMatchObject({ slug: 'default', tier: 'enterprise' });
      const subscription = await again.http().get('/api/subscription').set('Authorization', `Bearer ${login.body.accessToken}`);
      expect(subscription.body).toMatchObject({ tier: 'enterprise', license: { status: 'valid', customer: 'test suite' } });
    } finally {
      await again.close();
      afterStop = notPrivate(join(dataDir, 'pglite'));
      rmSync(dataDir, { recursive: true, force: true });
    }
    // Also what Postgres wrote at its stop with the process umask.
    expect(afterStop).toEqual([]);
    // Two boots of PGlite from an empty directory (migrations included): ~20 s on 2 cores, more when they are busy.
  }, 90_000);
});
