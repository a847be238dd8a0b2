#!/usr/bin/env node
// Builds the web console (console/) with Vite into dist/console, a production build whatever
// NODE_ENV the caller has (Vite follows it, and Jest sets it to `test`). Run by
// build-if-stale.mjs after `nest build`, and by the console's browser spec.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const build = spawnSync(
  process.execPath,
  [join(root, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'console/vite.config.mts', '--logLevel', 'warn'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } },
);
process.exit(build.status ?? 1);
