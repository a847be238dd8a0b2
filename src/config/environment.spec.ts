import { ConfigError, parseEnvironment, parseTrustProxy } from './environment';

const SECRET = 'x'.repeat(32);

describe('parseEnvironment', () => {
  it('applies the defaults to an empty environment', () => {
    const env = parseEnvironment({});
    expect(env).toMatchObject({
      PORT: 3000,
      HOST: '127.0.0.1',
      APP_ROLE: 'all',
      DATA_DIR: './.data',
      NODE_ENV: 'development',
      DB_POOL_SIZE: 10,
    });
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it('names the variable that is wrong', () => {
    expect(() => parseEnvironment({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => parseEnvironment({ APP_ROLE: 'boss' })).toThrow(/APP_ROLE/);
    expect(() => parseEnvironment({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => parseEnvironment({ PORT: '70000' })).toThrow(ConfigError);
  });

  it('lists every problem at once', () => {
    expect(() => parseEnvironment({ PORT: 'x', LOG_LEVEL: 'loud' })).toThrow(/PORT[\s\S]*LOG_LEVEL|LOG_LEVEL[\s\S]*PORT/);
  });

  it('takes DATABASE_READ_URL only with DATABASE_URL, as a postgres:// URL', () => {
    const replica = 'postgres://platform@replica:5432/platform';
    expect(parseEnvironment({ DATABASE_URL: 'postgres://db/app', DATABASE_READ_URL: replica }).DATABASE_READ_URL).toBe(replica);
    expect(parseEnvironment({ DATABASE_URL: 'postgres://db/app' }).DATABASE_READ_URL).toBeUndefined();
    expect(() => parseEnvironment({ DATABASE_READ_URL: replica })).toThrow(/DATABASE_READ_URL needs DATABASE_URL/);
    expect(() => parseEnvironment({ DATABASE_URL: 'postgres://db/app', DATABASE_READ_URL: 'mysql://x' })).toThrow(
      /DATABASE_READ_URL must be a postgres:\/\/ URL/,
    );
  });

  it('refuses production without DATABASE_URL', () => {
    expect(() => parseEnvironment({ NODE_ENV: 'production', JWT_SECRET: SECRET })).toThrow(/DATABASE_URL is required/);
  });

  it('refuses production without a JWT_SECRET, or with one under 32 bytes', () => {
    const base = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', SECRETS_KEY: 'ab'.repeat(32) };
    expect(() => parseEnvironment(base)).toThrow(/JWT_SECRET/);
    expect(() => parseEnvironment({ ...base, JWT_SECRET: 'short' })).toThrow(/JWT_SECRET must be at least 32 bytes/);
    expect(parseEnvironment({ ...base, JWT_SECRET: SECRET }).NODE_ENV).toBe('production');
  });

  it('refuses production without a SECRETS_KEY, and a key that is not 32 bytes', () => {
    const base = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', JWT_SECRET: SECRET };
    expect(() => parseEnvironment(base)).toThrow(/SECRETS_KEY/);
    expect(() => parseEnvironment({ ...base, SECRETS_KEY: 'abcd' })).toThrow(/SECRETS_KEY must be 32 bytes/);
  });

  it('takes TRIAL as true or false, and refuses it in production naming TRIAL and NODE_ENV', () => {
    expect(parseEnvironment({}).TRIAL).toBe(false);
    expect(parseEnvironment({ TRIAL: 'true' }).TRIAL).toBe(true);
    expect(parseEnvironment({ TRIAL: '0' }).TRIAL).toBe(false);
    expect(() => parseEnvironment({ TRIAL: 'yes please' })).toThrow(/TRIAL must be true or false/);
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', JWT_SECRET: SECRET, SECRETS_KEY: 'ab'.repeat(32) };
    expect(() => parseEnvironment({ ...production, TRIAL: 'true' })).toThrow(/TRIAL=true .* is refused when NODE_ENV=production/);
    expect(parseEnvironment({ ...production, TRIAL: 'false' }).TRIAL).toBe(false);
  });

  it('reads booleans and numbers', () => {
    expect(parseEnvironment({ SAML_ENFORCED: 'true', PORT: '8080' })).toMatchObject({ SAML_ENFORCED: true, PORT: 8080 });
  });

  it('keeps the shutdown drain inside the grace period', () => {
    expect(parseEnvironment({})).toMatchObject({ SHUTDOWN_DRAIN_MS: 5000, SHUTDOWN_GRACE_MS: 10000 });
    expect(parseEnvironment({ SHUTDOWN_DRAIN_MS: '0', SHUTDOWN_GRACE_MS: '1000' }).SHUTDOWN_DRAIN_MS).toBe(0);
    expect(() => parseEnvironment({ SHUTDOWN_GRACE_MS: '5000' })).toThrow(/SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_GRACE_MS/);
    expect(() => parseEnvironment({ SHUTDOWN_DRAIN_MS: '-1' })).toThrow(/SHUTDOWN_DRAIN_MS/);
  });

  it('takes TRUST_PROXY as a hop count or addresses, and refuses true with the way out', () => {
    expect(parseTrustProxy('1')).toBe(1);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('10.0.0.5, 172.16.0.0/12,loopback')).toEqual(['10.0.0.5', '172.16.0.0/12', 'loopback']);
    expect(() => parseEnvironment({ TRUST_PROXY: '10.0.0.0/8,fd00::/8' })).not.toThrow();
    expect(() => parseEnvironment({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY=true is no longer accepted.*TRUST_PROXY=1/);
    expect(() => parseEnvironment({ TRUST_PROXY: '10.0.0.0/33,proxy.local' })).toThrow(
      /not a hop count, address or CIDR: 10.0.0.0\/33, proxy.local/,
    );
  });
});
