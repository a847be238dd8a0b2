import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import ts from 'typescript';
import { DataSource } from 'typeorm';
import { generateLicenseKeyPair, issueLicense, LicenseGrant } from '../src/modules/licensing/application/license-issuer';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg, TestUser } from './support/test-app';

const VENDOR_KEY = process.env.TEST_LICENSE_PRIVATE_KEY!;
const grant = (extra: Partial<LicenseGrant> = {}): LicenseGrant => ({
  customer: 'Acme',
  tier: 'team',
  seats: 1_000_000,
  days: 30,
  ...extra,
});

/** Unlicensed at boot (the suite's own license is not applied); each spec installs what it needs. */
describe('license', () => {
  let t: TestApp;
  let home: TestOrg;
  let operator: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ env: { LICENSE_KEY: undefined } });
    await t.app.get(DataSource).query('DELETE FROM installation_license');
    home = await t.newOrg();
    operator = await t.addUser(home.id, 'member', { isOperator: true });
  });
  afterAll(async () => {
    // Leave the suite's license in place for the files that follow.
    await t.http().put('/api/license').set(bearer(operator)).send({ key: process.env.LICENSE_KEY });
    await t.close();
  });

  const install = (key: string) => t.http().put('/api/license').set(bearer(operator)).send({ key });
  const createOrg = (tier: string) =>
    t
      .http()
      .post('/api/organizations')
      .set(bearer(operator))
      .send({
        slug: `lic-${Math.random().toString(36).slice(2, 10)}`,
        name: 'x',
        tier,
        admin: { email: `a-${Math.random()}@lic.test`, password: PASSWORD },
      });

  it('without a license: everything is starter, higher tiers need one', async () => {
    // Removed through the API (the rows deleted at the start may still be in the service's
    // cache of the license, which a removal refreshes): installed first, so that there is one.
    expect((await install(process.env.LICENSE_KEY!)).status).toBe(200);
    expect((await t.http().delete('/api/license').set(bearer(operator))).status).toBe(204);
    const license = await t.http().get('/api/license').set(bearer(operator));
    expect(license.body).toEqual({ status: 'none', warnings: [expect.stringContaining('No license')] });
    expect((await t.http().get('/api/subscription').set(bearer(home.viewer))).body.license).toEqual({
      status: 'none',
      customer: null,
      tier: null,
      expiresAt: null,
      verifiedBy: null,
    });
    const refused = await createOrg('team');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'LICENSE_REQUIRED', status: 403 });
    const subscription = await t.http().get('/api/subscription').set(bearer(home.viewer));
    expect(subscription.body).toMatchObject({ tier: 'starter', rateLimit: { limit: 100, windowSeconds: 60 }, license: { status: 'none' } });
  });

  it('installs a valid license; tiers up to it may be assigned', async () => {
    // Seats to spare over the users the files before this one left in the shared database (a
    // few hundred in the whole suite): an organization's admin takes one.
    const [{ count }] = await t.app.get(DataSource).query<Array<{ count: string }>>('SELECT count(*) AS count FROM users');
    const seats = Number(count) + 500;
    const res = await install(await issueLicense(grant({ tier: 'team', seats, maxRateLimitPerMinute: 900 }), VENDOR_KEY));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'valid',
      customer: 'Acme',
      tier: 'team',
      seats,
      maxRateLimitPerMinute: 900,
      // The suite's vendor key is a throwaway one added with LICENSE_PUBLIC_KEYS: shown for what it is.
      verifiedBy: 'environment',
      warnings: [
        expect.stringContaining("verified against a key from LICENSE_PUBLIC_KEYS (the environment), not against the vendor's keys"),
      ],
    });
    const created = await createOrg('team');
    expect({ status: created.status, error: created.body.error as unknown }).toEqual({ status: 201, error: undefined });
    const above = await createOrg('enterprise');
    expect(above.status).toBe(403);
    expect(above.body.error.code).toBe('LICENSE_REQUIRED');
    const patched = await t.http().patch(`/api/organizations/${home.id}`).set(bearer(operator)).send({ tier: 'enterprise' });
    expect(patched.status).toBe(403);
    expect((await t.http().patch(`/api/organizations/${home.id}`).set(bearer(operator)).send({ tier: 'team' })).body.tier).toBe('team');
    const subscription = await t.http().get('/api/subscription').set(bearer(home.admin));
    expect(subscription.body).toMatchObject({
      tier: 'team',
      assignedTier: 'team',
      rateLimit: { tier: 'team', limit: 500 },
      features: ['webhooks', 'audit.log'],
      seats: { used: expect.any(Number), allowed: seats },
      license: { status: 'valid', customer: 'Acme', tier: 'team', verifiedBy: 'environment' },
      warnings: [expect.stringContaining('LICENSE_PUBLIC_KEYS')],
    });
  });

  it('refuses a tampered key, a key of another vendor, another alg and missing claims with LICENSE_INVALID', async () => {
    const good = await issueLicense(grant(), VENDOR_KEY);
    const [header, payload, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = [header, Buffer.from(JSON.stringify({ ...claims, seats: 9_999_999 })).toString('base64url'), signature].join('.');
    const otherVendor = await issueLicense(grant(), generateLicenseKeyPair().privateKeyPem);
    const hs256 = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(32)));
    const missing = await new SignJWT({ tier: 'team' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setSubject('Acme')
      .setIssuedAt()
      .setExpirationTime('1d')
      .sign((await import('node:crypto')).createPrivateKey(VENDOR_KEY));
    for (const [key, message] of [
      [tampered, 'does not match'],
      [otherVendor, 'does not match'],
      [hs256, 'EdDSA'],
      [missing, 'seats'],
      ['this-is-not.a-license.key-at-all', 'not a compact JWS'],
    ]) {
      const res = await install(key);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'LICENSE_INVALID', status: 400, message: expect.stringContaining(message) });
    }
    expect((await t.http().get('/api/license').set(bearer(operator))).body.seats).not.toBe(9_999_999);
  });

  it('keeps an expired license, shown with a warning, granting starter only', async () => {
    const lastYear = new Date(Date.now() - 400 * 86400_000);
    const res = await install(await issueLicense(grant({ tier: 'enterprise', days: 30 }), VENDOR_KEY, lastYear));
    expect(res.status).toBe(200);
    const warnings = [expect.stringContaining('expired'), expect.stringContaining('LICENSE_PUBLIC_KEYS')];
    expect(res.body).toMatchObject({ status: 'expired', tier: 'enterprise', warnings });
    const subscription = await t.http().get('/api/subscription').set(bearer(home.viewer));
    expect(subscription.body).toMatchObject({
      tier: 'starter',
      assignedTier: 'team',
      license: { status: 'expired' },
      warnings,
    });
    expect((await createOrg('team')).body.error.code).toBe('LICENSE_REQUIRED');
  });

  it('lets only operators change the license; admins of an organization only read it', async () => {
    const key = await issueLicense(grant(), VENDOR_KEY);
    const admin = await t.http().put('/api/license').set(bearer(home.admin)).send({ key });
    expect(admin.status).toBe(403);
    expect((await t.http().delete('/api/license').set(bearer(home.admin))).status).toBe(403);
    expect((await t.http().get('/api/license').set(bearer(home.admin))).status).toBe(200);
    expect((await t.http().get('/api/license').set(bearer(home.member))).status).toBe(403);
    expect((await t.http().get('/api/license').set(bearer(operator))).status).toBe(200);
  });

  it("gives each organization a seat quota: one organization filling its quota leaves the others' seats alone", async () => {
    expect((await install(await issueLicense(grant({ seats: 100_000 }), VENDOR_KEY))).status).toBe(200);
    const [greedy, other] = [await t.newOrg('team'), await t.newOrg('team')];
    const addUser = (org: TestOrg, tag: string) =>
      t
        .http()
        .post('/api/users')
        .set(bearer(org.admin))
        .send({ email: `${tag}-${Date.now()}-${Math.random()}@lic.test`, password: PASSWORD, role: 'viewer' });

    const overLicense = await t.http().patch(`/api/organizations/${greedy.id}`).set(bearer(operator)).send({ seatQuota: 100_001 });
    expect(overLicense.status).toBe(400);
    expect(overLicense.body.error.details).toEqual([expect.objectContaining({ path: 'seatQuota' })]);
    const byAdmin = await t.http().patch(`/api/organizations/${greedy.id}`).set(bearer(greedy.admin)).send({ seatQuota: 1000 });
    expect(byAdmin.status).toBe(403);

    // newOrg made 4 users (the first admin and one per role): a quota of 5 leaves one seat.
    const quota = await t.http().patch(`/api/organizations/${greedy.id}`).set(bearer(operator)).send({ seatQuota: 5 });
    expect(quota.status).toBe(200);
    expect(quota.body.seatQuota).toBe(5);
    expect((await addUser(greedy, 'fifth')).status).toBe(201);
    const sixth = await addUser(greedy, 'sixth');
    expect(sixth.status).toBe(403);
    expect(sixth.body.error).toMatchObject({ code: 'SEAT_LIMIT_REACHED', message: 'This organization has used its 5 seats' });
    expect((await addUser(other, 'unaffected')).status).toBe(201);

    const lifted = await t.http().patch(`/api/organizations/${greedy.id}`).set(bearer(operator)).send({ seatQuota: null });
    expect(lifted.body.seatQuota).toBeNull();
    expect((await addUser(greedy, 'after')).status).toBe(201);
  });

  it('gives the last seat of a quota to exactly one of many concurrent creates', async () => {
    const org = await t.newOrg('team');
    // newOrg made 4 users: a quota of 5 leaves one seat, which six requests race for.
    expect((await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ seatQuota: 5 })).status).toBe(200);
    const racers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        t
          .http()
          .post('/api/users')
          .set(bearer(org.admin))
          .send({ email: `race-${i}-${Date.now()}@lic.test`, password: PASSWORD, role: 'viewer' }),
      ),
    );
    expect(racers.map((r) => r.status).sort()).toEqual([201, 403, 403, 403, 403, 403]);
    for (const refused of racers.filter((r) => r.status === 403)) expect(refused.body.error.code).toBe('SEAT_LIMIT_REACHED');
    const [{ count }] = await t.app
      .get(DataSource)
      .query<Array<{ count: string }>>('SELECT count(*) AS count FROM users WHERE organization_id = $1', [org.id]);
    expect(Number(count)).toBe(5);
  });

  it("shows the installation's seats to admins and operators only; members and viewers see their organization's (issue 24)", async () => {
    expect((await install(await issueLicense(grant({ seats: 100_000 }), VENDOR_KEY))).status).toBe(200);
    const org = await t.newOrg('team');
    // newOrg made 4 users (the first admin and one per role).
    expect((await t.http().patch(`/api/organizations/${org.id}`).set(bearer(operator)).send({ seatQuota: 10 })).status).toBe(200);
    const operatorHere = await t.addUser(org.id, 'viewer', { isOperator: true });
    const ofOrganization = { used: 5, quota: 10 };
    const seatsOf = async (user: TestUser) => {
      const res = await t.http().get('/api/subscription').set(bearer(user));
      expect(res.status).toBe(200);
      return res.body.seats as unknown;
    };
    const [{ count }] = await t.app.get(DataSource).query<Array<{ count: string }>>('SELECT count(*) AS count FROM users');

    for (const user of [org.member, org.viewer]) expect(await seatsOf(user)).toEqual({ organization: ofOrganization });
    const installationWide = { used: Number(count), allowed: 100_000, organization: ofOrganization };
    expect(await seatsOf(org.admin)).toEqual(installationWide);
    // An instance operator sees them whatever the role in the organization.
    expect(await seatsOf(operatorHere)).toEqual(installationWide);
    // The other organization's members see their own figures, never this one's.
    expect(await seatsOf(home.member)).toEqual({ organization: { used: expect.any(Number), quota: null } });
  });

  it('refuses a user beyond the seats', async () => {
    const [{ count }] = await t.app.get(DataSource).query<Array<{ count: string }>>('SELECT count(*) AS count FROM users');
    expect((await install(await issueLicense(grant({ seats: Number(count) + 1 }), VENDOR_KEY))).status).toBe(200);
    const one = await t
      .http()
      .post('/api/users')
      .set(bearer(home.admin))
      .send({ email: `seat-${Date.now()}@lic.test`, password: PASSWORD, role: 'viewer' });
    expect(one.status).toBe(201);
    const over = await t
      .http()
      .post('/api/users')
      .set(bearer(home.admin))
      .send({ email: `over-${Date.now()}@lic.test`, password: PASSWORD, role: 'viewer' });
    expect(over.status).toBe(403);
    expect(over.body.error).toMatchObject({ code: 'SEAT_LIMIT_REACHED', status: 403 });
  });

  it('signs a license with the vendor tool that the service accepts', async () => {
    const keyFile = join(tmpdir(), `vendor-${process.pid}.pem`);
    writeFileSync(keyFile, VENDOR_KEY, { mode: 0o600 });
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '-r',
        'ts-node/register',
        'src/license-issue.ts',
        '--tier',
        'team',
        '--seats',
        '1000000',
        '--days',
        '365',
        '--key',
        keyFile,
        '--customer',
        'Tool Co',
      ],
      { env: { ...process.env, NODE_OPTIONS: '', TS_NODE_TRANSPILE_ONLY: '1' } },
    );
    const res = await install(stdout.trim());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'valid', customer: 'Tool Co', tier: 'team', seats: 1000000 });
  }, 60_000);
});

/**
 * Without LICENSE_PUBLIC_KEYS only the vendor's keys, built into the release, verify a
 * license: one signed by any other key (the suite's throwaway one included) is refused, and the
 * one installed by the suite counts as none.
 */
describe('license without LICENSE_PUBLIC_KEYS', () => {
  let t: TestApp;
  let operator: TestUser;
  let home: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ env: { LICENSE_PUBLIC_KEYS: undefined, LICENSE_KEY: undefined } });
    home = await t.newOrg();
    operator = await t.addUser(home.id, 'member', { isOperator: true });
  });
  afterAll(() => t.close());

  it('refuses a license signed by a throwaway key with LICENSE_INVALID, and shows no license', async () => {
    const before = await t.app.get(DataSource).query<Array<{ key: string }>>('SELECT key FROM installation_license');
    const res = await t
      .http()
      .put('/api/license')
      .set(bearer(operator))
      .send({ key: await issueLicense(grant(), VENDOR_KEY) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'LICENSE_INVALID', status: 400, message: expect.stringContaining("vendor's keys") });
    expect(await t.app.get(DataSource).query('SELECT key FROM installation_license')).toEqual(before);
    const license = await t.http().get('/api/license').set(bearer(operator));
    expect(license.body).toEqual({ status: 'none', warnings: [expect.stringContaining('No license')] });
    const subscription = await t.http().get('/api/subscription').set(bearer(home.viewer));
    expect(subscription.body).toMatchObject({ tier: 'starter', license: { status: 'none', verifiedBy: null } });
  });
});

/** The vendor's tool signs licenses; an installation only verifies them, so the image lacks it. */
describe("the vendor's license tool", () => {
  const root = join(__dirname, '..');

  it('is not compiled into the build the image ships, and its npm script is dropped from the image', () => {
    const { config } = ts.readConfigFile(join(root, 'tsconfig.build.json'), ts.sys.readFile);
    const built = ts.parseJsonConfigFileContent(config, ts.sys, root).fileNames.map((file) => relative(root, file));
    expect(built).toContain('src/main.ts');
    expect(built).toContain('src/modules/licensing/application/license-verifier.ts');
    expect(built).not.toContain('src/license-issue.ts');
    expect(built).not.toContain('src/modules/licensing/application/license-issuer.ts');
    expect(built.filter((file) => /license-issu/.test(file))).toEqual([]);
    expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toMatch(/npm pkg delete 'scripts\.license:issue'/);
  });
});
