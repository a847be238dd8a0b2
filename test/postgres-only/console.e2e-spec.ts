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
import { standardSigned } from '../triggers/support';

const ROOT = join(__dirname, '../..');
/** Screenshots of each page, kept by CI as artifacts (looked at, not compared). */
const SCREENSHOTS = join(ROOT, 'artifacts/console');
/** Debian's Chromium (`.ci/run` installs it); CHROMIUM_PATH for another. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

jest.setTimeout(90_000);

/** What the accessibility test uses of axe-core in the page. */
interface AxeLike {
  run(
    context: unknown,
    options: { runOnly: { type: 'tag'; values: string[] } },
  ): Promise<{ violations: Array<{ id: string; nodes: Array<{ target: string[] }> }>; passes: Array<{ id: string }> }>;
}

interface RunBody {
  id: string;
  status: string;
  steps: Array<{ id: string; status: string; output: unknown; childRunId?: string }>;
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
  const signedIn = async (
    email: string,
    options: { colorScheme?: 'light' | 'dark'; bypassCSP?: boolean } = {},
  ): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', ...options });
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
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self';");
    // Styles the scripts add (the editor's) carry the page's nonce, a new one at each load.
    const nonce = /style-src 'self' 'nonce-([A-Za-z0-9+/=]+)'/.exec(res.headers.get('content-security-policy')!)![1];
    const html = await res.text();
    expect(html).toContain('<div id="root"></div>');
    expect(html).toContain(`<meta property="csp-nonce" nonce="${nonce}"`);
    const again = await fetch(`${base}/console/`);
    expect(again.headers.get('content-security-policy')).not.toContain(nonce);
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

  it("edits a definition in the editor: the schema's problems as typed, the server's in place on save, then a new version", async () => {
    const workflowId = await defined({ name: 'edit me', steps: [{ id: 'one', action: 'transform.jsonata', with: { expression: '1' } }] });
    const { context, page } = await signedIn(org.admin.email, { colorScheme: 'dark' });
    const refusedByPolicy: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) refusedByPolicy.push(message.text());
    });
    await page.goto(`${base}/console/workflows/${workflowId}`);
    const editor = page.getByRole('textbox', { name: 'Workflow definition (JSON)' });
    await editor.waitFor();
    await page.getByText('No problems found.').waitFor();
    const save = page.getByRole('button', { name: 'Save as a new version' });
    const replace = async (definition: unknown) => {
      await editor.click();
      await page.keyboard.press('ControlOrMeta+a');
      await page.keyboard.press('Delete');
      // One line: Chromium turns runs of typed spaces into no-break spaces, which JSON does not take.
      await page.keyboard.insertText(JSON.stringify(definition));
    };
    const problems = page.getByRole('list', { name: 'Problems' });

    // A shape the schema refuses: found as typed, in the text and in the list, and not sendable.
    await replace({
      name: 'edit me',
      steps: [{ id: 'one', action: 'transform.jsonata', with: { expression: '1' }, retry: { maxAttempts: 0 } }],
    });
    await problems.getByRole('button', { name: /schema steps\[0\]\.retry\.maxAttempts/ }).waitFor();
    expect(await save.isDisabled()).toBe(true);
    expect(await page.locator('.cm-lintRange-error').count()).toBeGreaterThan(0);
    // The editor's own styles applied under the policy (with the page's nonce): its gutter sits beside the text.
    expect(
      await page.locator('.cm-gutters').evaluate((gutters) => gutters.ownerDocument.defaultView!.getComputedStyle(gutters).display),
    ).toBe('flex');
    expect(refusedByPolicy).toEqual([]);
    await shot(page, 'definition-editor-dark');

    // What only the server knows (a step that is not there): sent, refused, and placed at its path.
    await replace({ name: 'edit me', steps: [{ id: 'one', action: 'transform.jsonata', with: { expression: '1' }, needs: ['ghost'] }] });
    await page.getByText('No problems found.').waitFor();
    await save.click();
    const serverProblem = problems.getByRole('button', { name: /server steps\[0\]\.needs\[0\]/ });
    await serverProblem.waitFor();
    expect(await serverProblem.textContent()).toContain("'ghost', which is not a step");
    const versions = async () => (await t.http().get(`/api/workflows/${workflowId}`).set(bearer(org.admin))).body.version as number;
    expect(await versions()).toBe(1);

    await replace({ name: 'edited', steps: [{ id: 'two', action: 'transform.jsonata', with: { expression: '2' } }] });
    await page.getByText('No problems found.').waitFor();
    await save.click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 2' }).waitFor();
    await page.getByRole('heading', { name: 'edited' }).waitFor();
    const saved = (await t.http().get(`/api/workflows/${workflowId}`).set(bearer(org.admin))).body;
    expect(saved).toMatchObject({
      version: 2,
      name: 'edited',
      steps: [{ id: 'two', action: 'transform.jsonata', with: { expression: '2' } }],
    });

    // A member reads the definition and cannot change it.
    const member = await signedIn(org.member.email);
    await member.page.goto(`${base}/console/workflows/${workflowId}`);
    await member.page.getByRole('textbox', { name: 'Workflow definition (JSON)' }).waitFor();
    expect(await member.page.getByRole('button', { name: 'Save as a new version' }).count()).toBe(0);
    expect(await member.page.getByRole('link', { name: 'New workflow' }).count()).toBe(0);
    await member.context.close();
    await context.close();
  });

  it('follows a waiting run on its event stream, finds runs by id, and reaches map items and child runs from the graph', async () => {
    const child = await defined({
      name: 'child',
      steps: [{ id: 'double', action: 'transform.jsonata', with: { expression: 'input.order * 2' } }],
    });
    const parent = await defined({
      name: 'parent',
      steps: [
        { id: 'each', map: { over: '[1, 2, 3]', step: { action: 'transform.jsonata', with: { expression: 'item * 10' }, input: '$' } } },
        { id: 'call', workflow: child, needs: ['each'] },
        { id: 'approve', wait: { for: 'approval' }, needs: ['call'] },
      ],
    });
    const waiting = await run(parent, (r) => r.status === 'waiting');
    const { context, page } = await signedIn(org.member.email, { colorScheme: 'dark' });
    const streams: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/events')) streams.push(request.headers()['accept']);
    });

    // Found by its id on the runs page, alone.
    await page.getByLabel('Run id').fill(waiting.id);
    await page.getByRole('button', { name: 'Find' }).click();
    await eventually(async () => (await page.locator('tbody tr').count()) === 1, {
      timeoutMs: 5000,
      message: 'the runs page to show the one run',
    });
    await page.getByRole('link', { name: waiting.id }).waitFor();
    await page.getByLabel('Run id').fill('not-an-id');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('alert').filter({ hasText: 'Run id is a UUID' }).waitFor();
    await shot(page, 'runs-search-dark');

    await page.getByRole('link', { name: waiting.id }).click();
    await page.getByRole('heading', { name: /^Run .*waiting/ }).waitFor();
    await page.getByRole('button', { name: 'Step each: succeeded' }).click();
    const items = page.getByRole('table', { name: 'Items of step each' });
    await items.getByRole('row').nth(3).waitFor();
    expect(await items.getByRole('row').count()).toBe(4); // the header and three items
    await shot(page, 'run-map-items');

    // Answered elsewhere (here, the API): the page follows the run's event stream to the end.
    await eventually(async () => streams.length > 0, { timeoutMs: 5000, message: 'the run page to open its event stream' });
    expect(streams[0]).toBe('text/event-stream');
    const answered = await t
      .http()
      .post(`/api/workflows/${parent}/runs/${waiting.id}/steps/approve/complete`)
      .set(bearer(org.member))
      .send({ data: { approved: true } });
    expect(answered.status).toBe(200);
    await page.getByRole('heading', { name: /^Run .*succeeded/ }).waitFor();

    // The child run, from the step that started it, at its own workflow's URL.
    await page.getByRole('button', { name: 'Step call: succeeded' }).click();
    const childRun = await runOnce(parent, waiting.id, () => true);
    const childRunId = childRun.steps.find((s) => s.id === 'call')!.childRunId!;
    await page.getByRole('link', { name: childRunId }).click();
    await page.waitForURL(`${base}/console/workflows/${child}/runs/${childRunId}`);
    await page.getByRole('heading', { name: /^Run .*succeeded/ }).waitFor();
    await page.getByRole('link', { name: waiting.id }).waitFor(); // "child of" the parent, linked back
    await shot(page, 'run-child-dark');
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

  it('meets WCAG 2 A and AA on every page, in light and dark (axe-core)', async () => {
    const workflowId = await defined({
      name: 'checked',
      steps: [{ id: 'only', action: 'transform.jsonata', with: { expression: '$error("no")' } }],
    });
    const failed = await run(workflowId, (r) => r.status === 'failed');
    const paths = [
      'runs',
      `workflows/${workflowId}/runs/${failed.id}`,
      'executions',
      'approvals',
      'workflows',
      `workflows/${workflowId}`,
      'agents',
      'plugins',
      'webhooks',
      'api-keys',
      'service-accounts',
      'users',
      'audit',
      'subscription',
    ];
    const found: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      // axe-core is added to each page as a script, which the console's policy would refuse.
      const { context, page } = await signedIn(org.admin.email, { colorScheme, bypassCSP: true });
      for (const path of paths) {
        await page.goto(`${base}/console/${path}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        await page.waitForLoadState('networkidle');
        await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
        const checked = await page.evaluate(async () => {
          const { axe, document } = globalThis as unknown as { axe: AxeLike; document: unknown };
          const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
          return {
            violations: result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
            passed: result.passes.map((p) => p.id),
          };
        });
        // The checks ran: text was measured for contrast, and form fields for their labels.
        expect(checked.passed).toEqual(expect.arrayContaining(['color-contrast']));
        found.push(...checked.violations.map((v) => `${colorScheme} /console/${path} ${v}`));
      }
      await context.close();
    }
    expect(found).toEqual([]);
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

  it("makes a service account and its key (shown once, working as its role, rotated, revoked), and replays a trigger's received event as a second run", async () => {
    const { context, page } = await signedIn(org.admin.email);
    const menu = page.getByRole('navigation', { name: 'Main' });
    const viaKey = (key: string) => ({ Authorization: `Bearer ${key}` });

    // A viewer service account, made in the console.
    await menu.getByRole('link', { name: 'Service accounts', exact: true }).click();
    await page.getByRole('heading', { name: 'Service accounts', exact: true }).waitFor();
    await page.getByLabel('Name').fill('nightly export');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Create service account' }).click();
    await page.getByRole('heading', { name: 'Service account nightly export' }).waitFor();
    expect(await page.locator('dl.facts').textContent()).toContain('viewer');

    // Its key, shown once: it works as a viewer (reads, cannot write).
    await page.getByLabel('Key name', { exact: true }).fill('export job');
    await page.getByRole('button', { name: 'Create key' }).click();
    const issued = page.getByRole('status', { name: 'New API key' });
    await issued.waitFor();
    const key = (await issued.locator('code.secret').textContent())!.trim();
    expect(key).toMatch(/^plat_sa_/);
    await page.getByRole('cell', { name: 'export job', exact: true }).waitFor();
    await shot(page, 'service-account-key-issued');
    expect((await t.http().get('/api/workflows').set(viaKey(key))).status).toBe(200);
    const write = await t
      .http()
      .post('/api/workflows')
      .set(viaKey(key))
      .send({ name: 'not by a viewer', steps: [{ id: 'only', action: 'transform.jsonata', with: { expression: '1' } }] });
    expect(write.status).toBe(403);
    await issued.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'export job', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);

    // Rotated (no grace): a new secret shown once; the old one is refused, the new one works.
    await page.getByRole('button', { name: 'Rotate export job' }).click();
    await issued.waitFor();
    const rotated = (await issued.locator('code.secret').textContent())!.trim();
    expect(rotated).toMatch(/^plat_sa_/);
    expect(rotated).not.toBe(key);
    expect((await t.http().get('/api/workflows').set(viaKey(key))).status).toBe(401);
    expect((await t.http().get('/api/workflows').set(viaKey(rotated))).status).toBe(200);

    // Revoked: gone from the list, and refused.
    await page.getByRole('button', { name: 'Revoke export job' }).click();
    await page.getByText('It has no keys.').waitFor();
    expect((await t.http().get('/api/workflows').set(viaKey(rotated))).status).toBe(401);
    await shot(page, 'service-account');

    // A webhook trigger, made through the API, fired once by a sender signing as Standard Webhooks do.
    const workflowId = await defined({
      name: 'invoice hook',
      steps: [{ id: 'echo', action: 'transform.jsonata', with: { expression: '$' } }],
      output: 'steps.echo.output',
    });
    const created = await t
      .http()
      .post(`/api/workflows/${workflowId}/triggers`)
      .set(bearer(org.admin))
      .send({ scheme: 'standard-webhooks', name: 'invoices' });
    expect(created.status).toBe(201);
    const trigger = created.body as { id: string; secret: string };
    const payload = JSON.stringify({ type: 'invoice.paid', amount: 4200 });
    const fired = await fetch(`${base}/api/hooks/${trigger.id}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...standardSigned(trigger.secret, payload) },
      body: payload,
    });
    expect(fired.status).toBe(202);
    const first = (await fired.json()) as { eventId: string; runId: string };

    // The trigger's page, from its workflow's: its URL and scheme, the event, the request in full.
    await menu.getByRole('link', { name: 'Workflows', exact: true }).click();
    await page.getByRole('link', { name: 'invoice hook' }).click();
    await page.getByRole('link', { name: 'invoices', exact: true }).click();
    await page.getByRole('heading', { name: 'Trigger invoices' }).waitFor();
    expect(await page.getByLabel('Trigger URL').textContent()).toBe(`${base}/api/hooks/${trigger.id}`);
    await page.getByText('standard-webhooks', { exact: true }).waitFor();
    const firstRow = page.getByRole('row').filter({ has: page.getByRole('cell', { name: first.eventId, exact: true }) });
    await firstRow.getByRole('link', { name: first.runId }).waitFor();
    await firstRow.getByRole('button', { name: `Show event ${first.eventId}` }).click();
    const detail = page.getByRole('region', { name: `Event ${first.eventId}` });
    expect(await detail.getByLabel('Body').textContent()).toContain('"amount": 4200');
    expect(await detail.getByLabel('Headers').textContent()).toContain('"webhook-id"');
    await shot(page, 'trigger');

    // Replayed: a new run, named with a link to it, and a new event that replays the first.
    await firstRow.getByRole('button', { name: `Replay event ${first.eventId}` }).click();
    const replayed = page.getByRole('status').filter({ hasText: 'Replayed as run' });
    await replayed.waitFor();
    const runId = (await replayed.getByRole('link').textContent())!.trim();
    expect(runId).not.toBe(first.runId);
    const replayRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: runId }) });
    expect(await replayRow.textContent()).toContain(first.eventId);
    expect(await page.getByRole('alert').count()).toBe(0);
    await shot(page, 'trigger-replayed');
    const runs = await t.http().get(`/api/workflows/${workflowId}/runs?limit=100`).set(bearer(org.admin));
    expect((runs.body.data as RunBody[]).map((r) => r.id).sort()).toEqual([first.runId, runId].sort());
    const second = await runOnce(workflowId, runId, (r) => r.status === 'succeeded');
    expect(second).toMatchObject({ input: { type: 'invoice.paid', amount: 4200 } });
    await replayed.getByRole('link').click();
    await page.getByRole('heading', { name: /^Run / }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/workflows/${workflowId}/runs/${runId}`);
    await context.close();
  });
});
