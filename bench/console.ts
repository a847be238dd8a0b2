/**
 * Web console benchmark: the built service (dist/src/main.js, APP_ROLE=all) on a scratch
 * PostgreSQL database, with BENCH_CONSOLE_RUNS runs of the 3-step transform.jsonata workflow of
 * bench/support.ts, and Debian's Chromium driven by playwright-core:
 *
 *   1. the console's bundle: every file of dist/console/assets, raw and gzip (level 9);
 *   2. the runs page: BENCH_CONSOLE_LOADS loads of /console/runs, each in a new browser context
 *      (nothing cached) holding a fresh refresh token, as a reload of a signed-in tab does (the
 *      access token is in memory only, so every load refreshes first), then as many loads in
 *      one context (the assets cached). The figure is the page's own clock (performance.now(),
 *      from the navigation's start) when the first page of runs is in the table.
 *
 * Run with `npm run bench:console`. Settings (environment):
 *   DATABASE_URL              PostgreSQL server URL (default postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_CONSOLE_RUNS        runs created before the page is loaded (1000)
 *   BENCH_CONSOLE_LOADS       loads measured, each way (20)
 *   CHROMIUM_PATH             the browser (default /usr/bin/chromium)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import {
  BENCH_WORKFLOW,
  BENCH_WORKFLOW_INPUT,
  cleanupOnce,
  createWorkflow,
  field,
  intFromEnv,
  log,
  loginAndInstallTransform,
  machineLine,
  randomCredentials,
  runBenchmark,
  ScratchDatabases,
  serviceEnv,
  Services,
  summarize,
  unexpected,
  verdict,
} from './support';

const ROOT = resolve(__dirname, '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');
const ASSETS = join(ROOT, 'dist', 'console', 'assets');
const TARGETS = { bundleGzipKb: 300, firstPageMs: 1000 };

/** What the page's functions use of the browser's globals (this file is typed for Node). */
interface PageGlobals {
  document: { querySelectorAll(selector: string): { length: number } };
}

const settings = {
  serverUrl: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test',
  runs: intFromEnv('BENCH_CONSOLE_RUNS', 1000),
  loads: intFromEnv('BENCH_CONSOLE_LOADS', 20),
  chromium: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  readyTimeoutMs: intFromEnv('BENCH_READY_TIMEOUT_SECONDS', 120) * 1000,
};

const interrupted = new AbortController();
const services = new Services(ENTRY, ROOT);
const databases = new ScratchDatabases(settings.serverUrl, `platform_bench_console_${Date.now()}`);
const cleanup = cleanupOnce(services, databases);

function bundle(): { files: Array<{ name: string; raw: number; gzip: number }>; gzip: number } {
  const files = readdirSync(ASSETS).map((name) => {
    const bytes = readFileSync(join(ASSETS, name));
    return { name, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
  return { files, gzip: files.reduce((sum, file) => sum + file.gzip, 0) };
}

runBenchmark(ENTRY, interrupted, cleanup, async () => {
  const size = bundle();
  const credentials = randomCredentials();
  const databaseUrl = await databases.create('runs');
  const service = await services.start('all', serviceEnv(credentials, databaseUrl, 'all'), settings.readyTimeoutMs);
  const admin = await loginAndInstallTransform(service, credentials);
  const workflow = await createWorkflow(admin, BENCH_WORKFLOW);

  log(`creating ${settings.runs} runs`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < settings.runs) {
        next++;
        const res = await admin.request('POST', `/api/workflows/${workflow.id}/run?wait=0`, { input: BENCH_WORKFLOW_INPUT });
        if (res.status !== 202) throw unexpected('run', res.status, res.body);
      }
    }),
  );

  const base = `http://127.0.0.1:${service.port}`;
  // One sign-in (the login route is rate limited); each load refreshes with the token the one before rotated to.
  const login = await service.request('POST', '/api/auth/login', { email: credentials.ADMIN_EMAIL, password: credentials.ADMIN_PASSWORD });
  let refreshToken = field(login.body, 'refreshToken');
  if (login.status !== 200 || typeof refreshToken !== 'string') throw unexpected('login', login.status, login.body);
  const browser = await chromium.launch({
    executablePath: settings.chromium,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    /** Loads /console/runs signed in, and answers the page's clock when the table has its first page. */
    const load = async (context: Awaited<ReturnType<typeof browser.newContext>>): Promise<number> => {
      const page = await context.newPage();
      await page.addInitScript((value) => sessionStorage.setItem('platform.refreshToken', value), refreshToken as string);
      await page.goto(`${base}/console/runs`);
      // Functions, not strings: the console's policy refuses eval.
      await page.waitForFunction(() => (globalThis as unknown as PageGlobals).document.querySelectorAll('tbody tr').length >= 50, undefined, {
        timeout: 30_000,
      });
      const ms = await page.evaluate(() => performance.now());
      refreshToken = await page.evaluate(() => sessionStorage.getItem('platform.refreshToken'));
      await page.close();
      return ms;
    };
    const cold: number[] = [];
    for (let i = 0; i < settings.loads + 2; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const ms = await load(context);
      if (i >= 2) cold.push(ms);
      await context.close();
    }
    const warm: number[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    for (let i = 0; i < settings.loads + 2; i++) {
      const ms = await load(context);
      if (i >= 2) warm.push(ms);
    }
    await context.close();

    const c = summarize(cold);
    const w = summarize(warm);
    const kb = (bytes: number) => (bytes / 1024).toFixed(1);
    const out = [
      '',
      machineLine('Web console'),
      '',
      'bundle (dist/console/assets):',
      ...size.files.map((file) => `  ${file.name.padEnd(28)} ${kb(file.raw).padStart(8)} KB raw  ${kb(file.gzip).padStart(8)} KB gzip`),
      `  total gzip ${kb(size.gzip)} KB`,
      '',
      `runs page with ${settings.runs} runs, first page of 50 in the table (the page's clock from navigation start), ${settings.loads} loads:`,
      `  new context (nothing cached): p50 ${c.p50.toFixed(0)} ms, p99 ${c.p99.toFixed(0)} ms, mean ${c.mean.toFixed(0)} ms`,
      `  same context (assets cached): p50 ${w.p50.toFixed(0)} ms, p99 ${w.p99.toFixed(0)} ms, mean ${w.mean.toFixed(0)} ms`,
      '',
      'Targets:',
      `  bundle ≤ ${TARGETS.bundleGzipKb} KB gzip → ${kb(size.gzip)} KB ${verdict(size.gzip <= TARGETS.bundleGzipKb * 1024)}`,
      `  first page of runs ≤ ${TARGETS.firstPageMs} ms (p50, nothing cached) → ${c.p50.toFixed(0)} ms ${verdict(c.p50 <= TARGETS.firstPageMs)}`,
      '',
    ];
    process.stdout.write(out.join('\n'));
  } finally {
    await browser.close();
  }
});
