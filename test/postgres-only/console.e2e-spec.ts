import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, BrowserContext, chromium, Page } from 'playwright-core';
import { AppConfig } from '../../src/config/app-config';
import { install, registerAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { FakeRemoteAgent, Route, startFakeRemoteAgent } from '../support/fake-remote-agent';
import { startOidcProvider } from '../support/oidc-provider';
import { bearer, createTestApp, PASSWORD, TestApp, TestOrg } from '../support/test-app';

const ROOT = join(__dirname, '../..');
/** Screenshots of each page, kept by CI as artifacts (looked at, not compared). */
const SCREENSHOTS = join(ROOT, 'artifacts/console');
/** Debian's Chromium (`.ci/run` installs it); CHROMIUM_PATH for another. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

jest.setTimeout(90_000);

interface RunBody {
  id: string;
  status: string;
  steps: Array<{ id: string; status: string; output: unknown }>;
}

/**
 * The web console in a real headless Chromium, driven by Playwright, against the service with
 * its console built as `npm run build` builds it: a person signs in, finds a failed run and
 * retries it, answers an approval, makes and revokes an API key; a viewer sees no button it
 * cannot use. Runs on PostgreSQL only: the browser adds nothing PGlite would check differently.
 */
describe('web console', () => {
  let t: TestApp;
  let org: TestOrg;
  let remote: FakeRemoteAgent;
  let browser: Browser;
  let base: string;
  /** The remote agent answers 500 while this is set. */
  let broken = true;
  const answer: Route = () => (broken ? { status: 500, body: { error: 'the ledger is down' } } : { body: { booked: true } });

  beforeAll(async () => {
    const build = spawnSync(process.execPath, [join(ROOT, 'scripts/build-console.mjs')], { cwd: ROOT, encoding: 'utf8' });
    if (build.status !== 0) throw new Error(`The console did not build: ${build.stderr}`);
    mkdirSync(SCREENSHOTS, { recursive: true });
    remote = await startFakeRemoteAgent({ '/book': answer });
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    org = await t.newOrg('enterprise');
    for (const slug of ['http', 'transform']) await install(t, org, slug);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await remote?.close();
  });

  const defined = async (definition: Record<string, unknown>): Promise<string> => {
    const res = await t.http().post('/api/workflows').set(bearer(org.admin)).send(definition);
    if (res.status !== 201) throw new Error(`define: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  };
  const run = async (workflowId: string, until: (run: RunBody) => boolean): Promise<RunBody> => {
    const res = await t
      .http()
      .post(`/api/workflows/${workflowId}/run?wait=0`)
      .set(bearer(org.member))
      .send({ input: { order: 7 } });
    expect(res.status).toBe(202);
    return runOnce(workflowId, res.body.id as string, until);
  };
  const runOnce = (workflowId: string, runId: string, until: (run: RunBody) => boolean): Promise<RunBody> =>
    eventually(
      async () => {
        const res = await t.http().get(`/api/workflows/${workflowId}/runs/${runId}`).set(bearer(org.admin));
        return until(res.body as RunBody) ? (res.body as RunBody) : undefined;
      },
      { timeoutMs: 20_000, message: `run ${runId}` },
    );

  /** A new browser session, signed in through the console's form as `email`. */
  const signedIn = async (email: string): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Shorter than the test's: a step that never happens fails with what Playwright waited for.
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => process.stderr.write(`console page error: ${error.message}\n`));
    await page.goto(`${base}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    return { context, page };
  };

  const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

  it('is served by the service with a policy that allows nothing from elsewhere, and every console path gets the page', async () => {
    const res = await fetch(`${base}/console/runs?status=failed`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await res.text()).toContain('<div id="root"></div>');
    const missing = await fetch(`${base}/console/assets/missing.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String), status: 404 } });
  });

  it('signs in with a password, shows who is signed in, and signing out ends the session on the server', async () => {
    // A user of its own: signing out ends every session of the user.
    const user = await t.addUser(org.id, 'member');
    const { context, page } = await signedIn(user.email);
    await shot(page, 'runs-empty');
    await page.getByText(`${user.email} · member`).waitFor();
    const refreshToken = await page.evaluate(() => sessionStorage.getItem('platform.refreshToken'));
    expect(refreshToken).toEqual(expect.any(String));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('platform.refreshToken'))).toBeNull();
    const refresh = await t.http().post('/api/auth/refresh').send({ refreshToken });
    expect(refresh.status).toBe(401);
    // A wrong password shows the envelope's message.
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/INVALID_CREDENTIALS|invalid/i);
    await context.close();
  });

  it("shows a failed run and its failing step's error; retried from that step, the new run succeeds", async () => {
    const agentId = await registerAgent(t, org, {
      name: 'ledger',
      kind: 'http.agent',
      config: { url: `${remote.url}/book` },
      maxAttempts: 1,
    });
    const workflowId = await defined({
      name: 'book order',
      steps: [
        { id: 'prepare', action: 'transform.jsonata', with: { expression: '{"order": input.order}' } },
        { id: 'book', agent: agentId, needs: ['prepare'] },
      ],
    });
    broken = true;
    const failed = await run(workflowId, (r) => r.status === 'failed');
    const { context, page } = await signedIn(org.member.email);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('link', { name: failed.id }).click();
    await page.getByRole('heading', { name: /^Run / }).waitFor();
    // The graph: both steps, laid out from needs, with their status.
    await page.getByRole('button', { name: 'Step prepare: succeeded' }).waitFor();
    await page.getByRole('button', { name: 'Step book: failed' }).waitFor();
    // The failed step is selected first, with its error.
    const error = page.getByRole('complementary', { name: 'Step book' }).getByRole('alert');
    expect(await error.textContent()).toContain('500');
    await shot(page, 'run-failed');

    broken = false;
    await page.getByRole('button', { name: 'Retry from book' }).click();
    const retriedAs = page.getByRole('status').filter({ hasText: 'Retried as' });
    await retriedAs.waitFor();
    await retriedAs.getByRole('link').click();
    await page.getByRole('heading', { name: /^Run .*succeeded/ }).waitFor({ timeout: 20_000 });
    await shot(page, 'run-retried');
    const retriedId = page.url().split('/').pop()!;
    const retried = await runOnce(workflowId, retriedId, (r) => r.status === 'succeeded');
    expect(retried.steps.find((s) => s.id === 'book')).toMatchObject({ status: 'succeeded', output: { booked: true } });
    await context.close();
  });

  it('answers an approval through the form made from its schema, and the run goes on with the answer', async () => {
    const workflowId = await defined({
      name: 'approve refund',
      steps: [
        {
          id: 'approve',
          wait: {
            for: 'approval',
            schema: {
              type: 'object',
              required: ['approved', 'amount'],
              properties: {
                approved: { type: 'boolean', title: 'Approved' },
                amount: { type: 'integer', title: 'Amount' },
                note: { type: 'string', title: 'Note' },
              },
            },
          },
        },
      ],
    });
    const waiting = await run(workflowId, (r) => r.status === 'waiting');
    const { context, page } = await signedIn(org.member.email);
    await page.getByRole('link', { name: 'Approvals' }).click();
    const card = page.getByRole('article', { name: 'Approval approve' }).filter({ hasText: waiting.id });
    await card.waitFor();
    // A field left empty is refused in the form, before anything is sent.
    await card.getByRole('button', { name: 'Send answer' }).click();
    await card.getByText('Required', { exact: true }).waitFor();
    await card.getByLabel('Approved (required)').check();
    await card.getByLabel('Amount (required)').fill('1200');
    await card.getByLabel('Note').fill('ok by me');
    await shot(page, 'approvals');
    await card.getByRole('button', { name: 'Send answer' }).click();
    // Answered, it leaves the list of what waits on me.
    await card.waitFor({ state: 'detached' });
    const done = await runOnce(workflowId, waiting.id, (r) => r.status === 'succeeded');
    expect(done.steps[0].output).toMatchObject({ data: { approved: true, amount: 1200, note: 'ok by me' } });
    await context.close();
  });

  it('creates an API key shown once (it works), and revokes it (it stops working)', async () => {
    const { context, page } = await signedIn(org.member.email);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('deploy script');
    await page.getByRole('button', { name: 'Create key' }).click();
    const issued = page.getByRole('status', { name: 'New API key' });
    await issued.waitFor();
    const key = (await issued.locator('code.secret').textContent())!.trim();
    expect(key.length).toBeGreaterThan(20);
    await shot(page, 'api-keys-issued');
    expect((await t.http().get('/api/agents').set('Authorization', `Bearer ${key}`)).status).toBe(200);
    await issued.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'deploy script', exact: true }).waitFor();
    // Shown once: nowhere on the page any more.
    expect(await page.content()).not.toContain(key);
    await page.getByRole('button', { name: 'Revoke deploy script' }).click();
    await page.getByText('You have no keys.').waitFor();
    expect((await t.http().get('/api/agents').set('Authorization', `Bearer ${key}`)).status).toBe(401);
    await context.close();
  });

  it('shows a viewer the runs and approvals, with no button to retry, cancel or answer', async () => {
    const workflowId = await defined({
      name: 'viewer sees',
      steps: [{ id: 'approve', wait: { for: 'approval', schema: { type: 'object' } } }],
    });
    const waiting = await run(workflowId, (r) => r.status === 'waiting');
    const { context, page } = await signedIn(org.viewer.email);
    await page.goto(`${base}/console/workflows/${workflowId}/runs/${waiting.id}`);
    await page.getByRole('button', { name: 'Step approve: waiting' }).waitFor();
    await page.getByRole('complementary', { name: 'Step approve' }).waitFor();
    await shot(page, 'run-viewer');
    for (const name of [/^Cancel run$/, /^Retry/, /^Send answer$/]) expect(await page.getByRole('button', { name }).count()).toBe(0);
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('heading', { name: 'Approvals waiting on me' }).waitFor();
    expect(await page.getByRole('button', { name: 'Send answer' }).count()).toBe(0);
    await context.close();
  });

  it('lands an OpenID Connect sign-in started in the console back in the console, signed in', async () => {
    const idp = await startOidcProvider();
    try {
      const sso = await t.newOrg('enterprise');
      const client = await idp.register([`${t.app.get(AppConfig).publicUrl}/api/auth/oidc/${sso.slug}/callback`]);
      const settings = await t
        .http()
        .put('/api/auth/oidc')
        .set(bearer(sso.admin))
        .send({
          issuer: idp.issuer,
          clientId: client.clientId,
          clientSecret: client.clientSecret,
          defaultRole: 'member',
          allowedRedirects: [`${base}/console/sso`],
        });
      expect(settings.status).toBe(200);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      // The provider's own login page is not the console's: the browser stops at the redirect to
      // it, and the test answers the provider as the person would (its form, posted), then the
      // browser follows the provider's redirect back.
      let authorize: string | null = null;
      await page.route('**/api/auth/oidc/*/login?*', async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        authorize = response.headers().location ?? null;
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'to the provider' });
      });
      await page.goto(`${base}/console/sign-in`);
      await page.getByLabel('Organization (for single sign-on)').fill(sso.slug);
      await page.getByRole('link', { name: 'Sign in with OpenID Connect' }).click();
      const url = await eventually(() => authorize, { message: () => `the redirect to the provider (the browser is at ${page.url()})` });
      const email = `grace-${Date.now()}@corp.test`;
      const back = await idp.authorize(url, { email, name: 'Grace Hopper' });
      await page.goto(`${base}${back.pathname}${back.search}`);
      await page.getByRole('heading', { name: 'Runs' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/console/runs');
      await page.getByText(`${email} · member`).waitFor();
      await shot(page, 'sso-landed');
      await context.close();
    } finally {
      await idp.close();
    }
  });

  it("opens every page from the menu as an admin, each with what the API lists; a member's menu has no users or audit log", async () => {
    const webhook = await t
      .http()
      .post('/api/webhooks')
      .set(bearer(org.admin))
      .send({ url: `${remote.url}/hook`, eventTypes: ['workflow.run.*'] });
    expect(webhook.status).toBe(201);
    await registerAgent(t, org, { name: 'pages agent', kind: 'http.agent', config: { url: `${remote.url}/book` } });
    const workflowId = await defined({
      name: 'pages workflow',
      steps: [{ id: 'only', action: 'transform.jsonata', with: { expression: '1' } }],
    });
    // A second version, and a schedule.
    const put = await t
      .http()
      .put(`/api/workflows/${workflowId}`)
      .set(bearer(org.admin))
      .send({ name: 'pages workflow', steps: [{ id: 'only', action: 'transform.jsonata', with: { expression: '2' } }] });
    expect(put.status).toBe(200);
    const schedule = await t
      .http()
      .post(`/api/workflows/${workflowId}/schedules`)
      .set(bearer(org.admin))
      .send({ cron: '0 3 * * *', timezone: 'UTC' });
    expect(schedule.status).toBe(201);
    const { context, page } = await signedIn(org.admin.email);
    const pages: Array<[link: string, heading: string, shows: string]> = [
      ['Executions', 'Executions', 'Status'],
      ['Workflows', 'Workflows', 'pages workflow'],
      ['Agents', 'Agents', 'pages agent'],
      ['Plugins', 'Plugins', 'transform'],
      ['Webhooks', 'Webhooks', `${remote.url}/hook`],
      ['Users', 'Users', org.viewer.email],
      ['Audit log', 'Audit log', 'workflow.created'],
      ['License', 'License and subscription', 'enterprise'],
    ];
    for (const [link, heading, shows] of pages) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await page.getByText(shows).first().waitFor();
      expect(await page.getByRole('alert').count()).toBe(0);
      await shot(page, link.toLowerCase().replace(/ /g, '-'));
    }
    // A workflow's page: its definition, and a run started from the form made from its input.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows', exact: true }).click();
    await page.getByRole('link', { name: 'pages workflow' }).click();
    await page.getByRole('heading', { name: 'Definition' }).waitFor();
    // The schedule's next three fire times, and the two versions side by side.
    await page.getByRole('cell', { name: /,.*,/ }).waitFor();
    await page.getByRole('heading', { name: 'Versions side by side' }).waitFor();
    expect(await page.getByLabel('Version 1', { exact: true }).textContent()).toContain('"expression": "1"');
    expect(await page.getByLabel('Version 2', { exact: true }).textContent()).toContain('"expression": "2"');
    await shot(page, 'workflow');
    // The endpoint's delivery log.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('link', { name: `${remote.url}/hook` }).click();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    // An admin sends failed messages again from a time on.
    await page
      .getByLabel('Send failed and skipped messages again, since')
      .fill(new Date(Date.now() - 86_400_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Recover' }).click();
    await page.getByRole('status').filter({ hasText: 'are being sent again' }).waitFor();
    await shot(page, 'webhook-deliveries');
    await context.close();

    const member = await signedIn(org.member.email);
    const menu = member.page.getByRole('navigation', { name: 'Main' });
    await menu.getByRole('link', { name: 'License' }).waitFor();
    expect(await menu.getByRole('link', { name: 'Users' }).count()).toBe(0);
    expect(await menu.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    // Reached anyway, the API's refusal is shown plainly.
    await member.page.goto(`${base}/console/users`);
    expect(await member.page.getByRole('alert').textContent()).toMatch(/^Not allowed here\./);
    await member.context.close();
  });
});
