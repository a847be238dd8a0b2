import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { Router, static as serveStatic } from 'express';
import { envelope } from '../errors/error-envelope';

/**
 * The console's content security policy: everything from the service itself, nothing from
 * elsewhere (it works air-gapped), no inline script, and no framing. Styles are the service's
 * files, plus those the page's scripts add with the page's nonce (the definition editor's):
 * a new nonce for every load of the page.
 */
export function consoleCsp(nonce?: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    nonce ? `style-src 'self' 'nonce-${nonce}'` : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Where the page names its nonce (index.html has it as a placeholder): read by the scripts that add styles. */
const NONCE_PLACEHOLDER = '__CSP_NONCE__';

/** Where `npm run build` puts the console: dist/console under the project's root (the folder with package.json). */
export function consoleDirectory(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist/console');
}

/**
 * Serves the web console at /console: its hashed assets for a year, and its one page for every
 * other path under it (the console routes in the browser), never cached, so a new build is
 * picked up at the next load. When the console was not built, /console answers 404 in the envelope.
 */
export function serveConsole(app: INestApplication, directory = consoleDirectory()): void {
  const router = Router();
  const page = join(directory, 'index.html');
  router.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', consoleCsp());
    next();
  });
  router.use('/assets', serveStatic(join(directory, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false }));
  router.get('/{*page}', async (_req, res) => {
    const html = await readFile(page, 'utf8').catch(() => null);
    if (html === null) {
      res.status(404).json(envelope('NOT_FOUND', 'The console is not built on this instance: run npm run build'));
      return;
    }
    const nonce = randomBytes(18).toString('base64');
    res.setHeader('Content-Security-Policy', consoleCsp(nonce));
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(html.replaceAll(NONCE_PLACEHOLDER, nonce));
  });
  app.use('/console', router);
}
