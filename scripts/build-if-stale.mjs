#!/usr/bin/env node
// Builds (`nest build`, then the web console with Vite into dist/console) only when the sources changed since the last successful build, so
// `npm start` and `npm run cli` start at once the second time. Stale when dist/.build-stamp is
// missing or older than the newest file under src/ or one of the build's configuration files.
// `npm run build` (--force) always builds, and writes the stamp too.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const inputs = [
  'src',
  'console',
  'clients/typescript/src',
  'ormconfig.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'nest-cli.json',
  'package.json',
  'package-lock.json',
];

/** The newest modification under `path`: { time, path } (time 0 when it does not exist). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return { time: 0, path };
  }
  // A folder's own time changes when a file in it is added, renamed or deleted.
  let latest = { time: stat.mtimeMs, path };
  if (stat.isDirectory()) {
    for (const entry of readdirSync(path)) {
      const found = newest(join(path, entry));
      if (found.time > latest.time) latest = found;
    }
  }
  return latest;
}

function stampTime() {
  try {
    return statSync(stamp).mtimeMs;
  } catch {
    return -1;
  }
}

const force = process.argv.includes('--force');
if (!force) {
  const changed = inputs.map((input) => newest(join(root, input))).reduce((a, b) => (b.time > a.time ? b : a));
  const built = stampTime();
  if (built >= changed.time) process.exit(0);
  process.stderr.write(
    built < 0 ? 'No build yet: building\n' : `${changed.path.slice(root.length + 1)} changed since the last build: building\n`,
  );
}
// Taken before the build: a file saved while it runs makes the next start build again.
const started = new Date();
const build = spawnSync(process.execPath, [join(root, 'node_modules/@nestjs/cli/bin/nest.js'), 'build'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const consoleBuild = spawnSync(process.execPath, [join(root, 'scripts/build-console.mjs')], { cwd: root, stdio: 'inherit' });
if (consoleBuild.status !== 0) process.exit(consoleBuild.status ?? 1);
writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);
