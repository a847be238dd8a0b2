import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { entryPoint } from './support/service-process';
import { createTestApp } from './support/test-app';

const run = promisify(execFile);
const CLI = entryPoint('cli');
const root = join(__dirname, '..');

function cli(...args: string[]) {
  return run(CLI[0], [...CLI.slice(1), ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('cli org:create', () => {
  const slug = `cli-${Date.now().toString(36)}`;
  const email = `boss@${slug}.example`;

  it('creates an organization whose admin can sign in', async () => {
    const res = await cli(
      'org:create',
      '--slug',
      slug,
      '--name',
      'From the CLI',
      '--tier',
      'team',
      '--admin-email',
      email,
      '--admin-password',
      'a long cli password',
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ slug, tier: 'team', id: expect.any(String), adminUserId: expect.any(String) });
    const t = await createTestApp();
    try {
      const login = await t.http().post('/api/auth/login').send({ email, password: 'a long cli password' });
      expect(login.status).toBe(200);
    } finally {
      await t.close();
    }
  }, 60000);

  it('reports a taken slug and bad arguments with a non-zero exit', async () => {
    const taken = await cli(
      'org:create',
      '--slug',
      slug,
      '--name',
      'Again',
      '--admin-email',
      `x@${slug}.example`,
      '--admin-password',
      'a long cli password',
    );
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('ORGANIZATION_SLUG_TAKEN');
    const missing = await cli('org:create', '--slug', 'x');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--name');
  }, 60000);
});
