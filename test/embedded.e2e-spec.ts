import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp } from './support/test-app';

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
    } finally {
      await t.close();
    }
    // A restart keeps the data and the generated secret: the admin still signs in. With a
    // LICENSE_KEY now, the installation's one organization is raised to the licensed tier.
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
      rmSync(dataDir, { recursive: true, force: true });
    }
    // Two boots of PGlite from an empty directory (migrations included): ~20 s on 2 cores, more when they are busy.
  }, 90_000);
});
