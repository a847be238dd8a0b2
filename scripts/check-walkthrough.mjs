#!/usr/bin/env node
/**
 * The README's walkthrough is examples/walkthrough.sh: each block of the script between
 * "# >>> <name>" and "# <<<" appears verbatim in README.md as a ```bash block right under
 * "<!-- walkthrough:<name> -->" (once or more), and every block of the script appears there.
 *
 *   node scripts/check-walkthrough.mjs            fails, naming the blocks, when they differ (npm run lint)
 *   node scripts/check-walkthrough.mjs --write    rewrites the README's blocks from the script (npm run docs:walkthrough)
 *
 * Optional arguments after the flag: the README and the script to compare (the spec uses copies).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const write = args[0] === '--write';
const [readmePath = join(root, 'README.md'), scriptPath = join(root, 'examples/walkthrough.sh')] = write ? args.slice(1) : args;

const SECTION = /^# >>> (\S+)\n([\s\S]*?)^# <<<$/gm;
const README_BLOCK = /(<!-- walkthrough:(\S+) -->\n```bash\n)([\s\S]*?)(^```$)/gm;

const script = readFileSync(scriptPath, 'utf8');
const readme = readFileSync(readmePath, 'utf8');
const sections = new Map([...script.matchAll(SECTION)].map(([, name, body]) => [name, body]));

const problems = [];
if (sections.size === 0) problems.push(`${scriptPath} has no "# >>> <name>" ... "# <<<" blocks`);
const shown = new Set();
const updated = readme.replace(README_BLOCK, (whole, head, name, body, tail) => {
  shown.add(name);
  const section = sections.get(name);
  if (section === undefined) {
    problems.push(`README block walkthrough:${name} has no "# >>> ${name}" block in ${scriptPath}`);
    return whole;
  }
  if (body !== section) problems.push(`README block walkthrough:${name} differs from the script's block`);
  return head + section + tail;
});
for (const name of sections.keys()) {
  if (!shown.has(name))
    problems.push(`the script's block "${name}" is not in README.md (add <!-- walkthrough:${name} --> and a bash block)`);
}

if (write) {
  const unknown = problems.filter((p) => !p.includes('differs'));
  if (unknown.length) fail(unknown);
  if (updated !== readme) writeFileSync(readmePath, updated);
  console.log(updated === readme ? 'README walkthrough already current' : 'README walkthrough blocks rewritten from the script');
} else if (problems.length) {
  fail([...problems, 'edit examples/walkthrough.sh, then run npm run docs:walkthrough']);
}

function fail(lines) {
  console.error(lines.join('\n'));
  process.exit(1);
}
