import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { issueLicense } from '../src/modules/licensing/application/license-issuer';
import { install } from './support/agents';
import { eventually } from './support/eventually';
import { entryPoint } from './support/service-process';
import { bearer, createTestApp, TestApp, TestOrg, TestUser } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

const DAY = 86_400_000;
const VENDOR_KEY = process.env.TEST_LICENSE_PRIVATE_KEY!;

/**
 * TRIAL=true: enterprise features for every organization and loopback targets for 30 days from
 * the installation's first start in trial mode, recorded once in installation_trial; then what the
 * license allows. The suite's license is removed while this file runs and put back at the end.
 */
describe('trial mode (TRIAL=true)', () => {
  let t: TestApp;
  let receiver: Receiver;

  /**
   * An app in trial mode without a license: the suite's is removed (the cache with it). `api`:
   * it works no jobs (those the files before left in the shared database included).
   */
  async function bootTrial(role: 'all' | 'api' = 'all'): Promise<{ home: TestOrg; operator: TestUser }> {
    t = await createTestApp({ env: { LICENSE_KEY: undefined, TRIAL: 'true', OUTBOUND_ALLOWLIST: '', APP_ROLE: role } });
    const home = await t.newOrg('starter');
    const operator = await t.addUser(home.id, 'member', { isOperator: true });
    await t.http().delete('/api/license').set(bearer(operator));
    return { home, operator };
  }

  const recordedStarts = async (): Promise<Date[]> =>
    ((await t.app.get(DataSource).query('SELECT started_at FROM installation_trial')) as Array<{ started_at: Date }>).map(
      (row) => new Date(row.started_at),
    );
  const hook = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
  const createWebhook = (org: TestOrg, path: string) =>
    t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: hook(path), eventTypes: ['plugin.installed'] });

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
  });

  describe('in force', () => {
    let home: TestOrg;
    let operator: TestUser;
    let startedAt: Date;

    beforeAll(async () => {
      ({ home, operator } = await bootTrial());
      const starts = await recordedStarts();
      expect(starts).toHaveLength(1);
      startedAt = starts[0];
    });
    afterAll(async () => {
      await t.close();
    });

    it('records the start of the trial at the first start in trial mode', () => {
      expect(Date.now() - startedAt.getTime()).toBeLessThan(5 * 60_000);
    });

    it('GET /api/license shows the trial, its end and the days left', async () => {
      const res = await t.http().get('/api/license').set(bearer(operator));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        status: 'none',
        trial: {
          active: true,
          tier: 'enterprise',
          startedAt: startedAt.toISOString(),
          endsAt: new Date(startedAt.getTime() + 30 * DAY).toISOString(),
          daysLeft: 30,
        },
        warnings: [expect.stringMatching(/^Trial mode \(TRIAL=true\): .* until .* \(30 days left\)$/)],
      });
    });

    it('gives a starter organization the enterprise tier and its features', async () => {
      const subscription = await t.http().get('/api/subscription').set(bearer(home.admin));
      expect(subscription.body).toMatchObject({
        tier: 'enterprise',
        assignedTier: 'starter',
        rateLimit: { tier: 'enterprise', limit: 2000 },
        features: expect.arrayContaining(['webhooks', 'sso.saml']),
      });
      // Organizations of any tier may be created: the trial is the license for now.
      const created = await t.newOrg('enterprise');
      expect(created.id).toEqual(expect.any(String));
    });

    it('lets a starter organization have a webhook on a loopback address, and delivers to it', async () => {
      const res = await createWebhook(home, '/trial');
      expect(res.status).toBe(201);
      await install(t, home, 'transform');
      const delivered = await eventually(() => receiver.on('/trial')[0], { timeoutMs: 20_000, message: 'the delivery to loopback' });
      expect(JSON.parse(delivered.body)).toMatchObject({ type: 'plugin.installed' });
    });
  });

  describe('ended (the recorded start 31 days back)', () => {
    let home: TestOrg;
    let operator: TestUser;
    let recorded: Date;

    beforeAll(async () => {
      // Between two boots: the second one must keep what is recorded, not start a new trial.
      const db = new Client({ connectionString: process.env.DATABASE_URL });
      await db.connect();
      const { rows } = await db.query<{ started_at: Date }>(
        `UPDATE installation_trial SET started_at = started_at - interval '31 days' RETURNING started_at`,
      );
      await db.end();
      recorded = new Date(rows[0].started_at);
      // Nothing here is delivered: an API process only.
      ({ home, operator } = await bootTrial('api'));
    });
    afterAll(async () => {
      // Leave the suite's license in place, and no trial, for the files that follow.
      await t.http().put('/api/license').set(bearer(operator)).send({ key: process.env.LICENSE_KEY });
      await t.app.get(DataSource).query('DELETE FROM installation_trial');
      await t.close();
    });

    it('keeps the first recorded start: a second boot does not start the trial again', async () => {
      expect(await recordedStarts()).toEqual([recorded]);
    });

    it('GET /api/license shows that the trial ended, with a warning', async () => {
      const res = await t.http().get('/api/license').set(bearer(operator));
      expect(res.body).toEqual({
        status: 'none',
        trial: {
          active: false,
          tier: 'enterprise',
          startedAt: recorded.toISOString(),
          endsAt: new Date(recorded.getTime() + 30 * DAY).toISOString(),
          daysLeft: 0,
        },
        warnings: [
          expect.stringMatching(/^The trial ended on .*: organizations have what the license allows .*OUTBOUND_ALLOWLIST/),
          expect.stringContaining('No license is installed'),
        ],
      });
    });

    it("falls back to what the license allows: starter without one, the license's tier with one", async () => {
      const refused = await createWebhook(home, '/ended');
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FEATURE_NOT_AVAILABLE');
      expect((await t.http().get('/api/subscription').set(bearer(home.admin))).body).toMatchObject({ tier: 'starter' });

      const key = await issueLicense({ customer: 'Acme', tier: 'team', seats: 1_000_000, days: 30 }, VENDOR_KEY);
      // 503 says "retry shortly" (Retry-After): it came back here in the whole suite's runs on
      // PostgreSQL (never with this file alone) while this app also worked the jobs the files
      // before left behind; it is an API process now, and a 503 is still tried once more.
      const install = () => t.http().put('/api/license').set(bearer(operator)).send({ key });
      let installed = await install();
      if (installed.status === 503) installed = await install();
      expect(installed.status).toBe(200);
      const team = await t.newOrg('team');
      expect((await t.http().get('/api/subscription').set(bearer(team.admin))).body).toMatchObject({ tier: 'team' });
      const above = await t.http().patch(`/api/organizations/${team.id}`).set(bearer(operator)).send({ tier: 'enterprise' });
      expect(above.body.error?.code).toBe('LICENSE_REQUIRED');
    });

    it('refuses loopback targets again, naming OUTBOUND_ALLOWLIST as the way to allow one', async () => {
      // The team license of the test before gives webhooks; the trial no longer gives loopback.
      const team = await t.newOrg('team');
      const res = await createWebhook(team, '/ended');
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: `The webhook URL is not allowed: Outbound requests to 127.0.0.1 are not allowed; to allow an internal target, add it to OUTBOUND_ALLOWLIST`,
      });
    });
  });

  it('is refused at boot with NODE_ENV=production, naming TRIAL and NODE_ENV', async () => {
    const root = join(__dirname, '..');
    const [node, ...main] = entryPoint('main');
    const failure = await promisify(execFile)(node, main, {
      cwd: root,
      timeout: 80_000,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        NODE_ENV: 'production',
        TRIAL: 'true',
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        JWT_SECRET: 'x'.repeat(32),
        SECRETS_KEY: 'ab'.repeat(32),
      },
    }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failure).toMatchObject({ code: 1 });
    expect(failure?.stderr).toMatch(/TRIAL=true .* is refused when NODE_ENV=production/);
  }, 90_000);
});
