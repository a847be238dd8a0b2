import { AppConfig } from './app-config';
import { parseEnvironment } from './environment';
import { startupLine } from './startup-line';

const SECRETS = { JWT_SECRET: 'x'.repeat(32), SECRETS_KEY: 'ab'.repeat(32) };
const configOf = (env: Record<string, string>) => new AppConfig(parseEnvironment({ ...SECRETS, ...env }));

describe('startupLine', () => {
  it('names the URL, the API docs, the role and the embedded database with its folder', () => {
    const line = startupLine(configOf({ DATA_DIR: '/srv/platform' }), { address: '127.0.0.1', family: 'IPv4', port: 3000 });
    expect(line).toBe(
      'Platform ready at http://127.0.0.1:3000; API docs http://127.0.0.1:3000/api/docs; role all; ' +
        'database embedded PGlite, data in /srv/platform/pglite',
    );
  });

  it('names the PostgreSQL server and database, never the password', () => {
    const config = configOf({
      HOST: '0.0.0.0',
      APP_ROLE: 'api',
      DATABASE_URL: 'postgres://platform:s3cret-pass@postgres:5432/platform',
      PUBLIC_URL: 'https://platform.example.com',
    });
    const line = startupLine(config, { address: '0.0.0.0', family: 'IPv4', port: 3000 });
    expect(line).toBe(
      'Platform ready at http://localhost:3000 (listening on 0.0.0.0:3000, every interface); API docs http://localhost:3000/api/docs; ' +
        'public URL https://platform.example.com; role api; database PostgreSQL platform on postgres:5432 as platform',
    );
    expect(line).not.toContain('s3cret');
  });

  it('names the read replica of the history lists where the API is served, never its password', () => {
    const env = { DATABASE_URL: 'postgres://db.internal/platform', DATABASE_READ_URL: 'postgres://reader:s3cret@replica:5432/platform' };
    const address = { address: '127.0.0.1', family: 'IPv4', port: 3000 };
    const line = startupLine(configOf(env), address);
    expect(line).toMatch(
      /; database PostgreSQL platform on db\.internal; history lists from the replica platform on replica:5432 as reader$/,
    );
    expect(line).not.toContain('s3cret');
    expect(startupLine(configOf({ ...env, APP_ROLE: 'worker' }), address)).not.toContain('replica');
  });

  it('marks a trial: until when and the days left, or that it ended', () => {
    const config = configOf({ DATA_DIR: '/srv/platform', TRIAL: 'true' });
    const address = { address: '127.0.0.1', family: 'IPv4', port: 3000 };
    const endsAt = new Date('2026-12-27T04:30:00.000Z');
    expect(startupLine(config, address, { active: true, endsAt, daysLeft: 30 })).toBe(
      'Platform ready at http://127.0.0.1:3000; API docs http://127.0.0.1:3000/api/docs; role all; ' +
        'database embedded PGlite, data in /srv/platform/pglite; ' +
        'TRIAL until 2026-12-27T04:30:00.000Z (30 days left): enterprise features, loopback targets allowed',
    );
    expect(startupLine(config, address, { active: false, endsAt, daysLeft: 0 })).toMatch(
      /; TRIAL ended on 2026-12-27T04:30:00.000Z: back to what the license allows$/,
    );
  });

  it('says a worker serves no API, on the port it really got', () => {
    const config = configOf({ APP_ROLE: 'worker', PORT: '0', DATABASE_URL: 'postgres://db.internal/jobs' });
    expect(startupLine(config, { address: '127.0.0.1', family: 'IPv4', port: 41234 })).toBe(
      'Platform worker ready: health and metrics at http://127.0.0.1:41234, no API; role worker; database PostgreSQL jobs on db.internal',
    );
  });
});
