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
    // A restart keeps the data and the generated secret: the admin still signs in.
    const again = await createTestApp({ env: { ...env, ADMIN_PASSWORD: 'ignored once bootstrapped' } });
    try {
      const login = await again.http().post('/api/auth/login').send({ email: 'root@embedded.test', password: 'embedded admin password' });
      expect(login.status).toBe(200);
    } finally {
      await again.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
