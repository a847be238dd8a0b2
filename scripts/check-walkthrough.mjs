#!/usr/bin/env node
/**
 * The walkthrough (docs/getting-started.md) is examples/walkthrough.sh: each block of the script
 * between "# >>> <name>" and "# <<<" appears verbatim in docs/getting-started.md as a ```bash
 * block right under "<!-- walkthrough:<name> -->" (once or more), and every block of the script
 * appears there. Other pages of docs/ (and README.md) may show a block too, under the same
 * marker; those copies are checked (and rewritten) as well, but need not show every block.
 *
 *   node scripts/check-walkthrough.mjs            fails, naming the blocks, when they differ (npm run lint)
 *   node scripts/check-walkthrough.mjs --write    rewrites the pages' blocks from the script (npm run docs:walkthrough)
 *
 * Optional arguments after the flag: the walkthrough page and the script to compare (the spec
 * uses copies); then only that page is checked.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const write = args[0] === '--write';
const [pagePath, scriptPath = join(root, 'examples/walkthrough.sh')] = write ? args.slice(1) : args;
const walkthroughPath = pagePath ?? join(root, 'docs/getting-started.md');
const otherPages =
  pagePath === undefined
    ? [
        join(root, 'README.md'),
        ...readdirSync(join(root, 'docs'))
          .filter((name) => name.endsWith('.md'))
          .map((name) => join(root, 'docs', name))
          .filter((path) => path !== walkthroughPath),
      ]
    : [];

const SECTION = /^# >>> (\S+)\n([\s\S]*?)^# <<<$/gm;
const PAGE_BLOCK = /(<!-- walkthrough:(\S+) -->\n```bash\n)([\s\S]*?)(^```$)/gm;

const script = readFileSync(scriptPath, 'utf8');
const sections = new Map([...script.matchAll(SECTION)].map(([, name, body]) => [name, body]));

const problems = [];
if (sections.size === 0) problems.push(`${scriptPath} has no "# >>> <name>" ... "# <<<" blocks`);
const pages = [walkthroughPath, ...otherPages].map((path) => check(path));
const walkthroughName = pagePath === undefined ? relative(root, walkthroughPath) : basename(walkthroughPath);
for (const name of sections.keys()) {
  if (!pages[0].shown.has(name))
    problems.push(`the script's block "${name}" is not in ${walkthroughName} (add <!-- walkthrough:${name} --> and a bash block)`);
}

if (write) {
  const unknown = problems.filter((p) => !p.includes('differs'));
  if (unknown.length) fail(unknown);
  const changed = pages.filter((page) => page.updated !== page.text);
  for (const page of changed) writeFileSync(page.path, page.updated);
  console.log(
    changed.length === 0
      ? 'walkthrough blocks already current'
      : `walkthrough blocks rewritten from the script in ${changed.map((page) => relative(root, page.path)).join(', ')}`,
  );
} else if (problems.length) {
  fail([...problems, 'edit examples/walkthrough.sh, then run npm run docs:walkthrough']);
}

/** The page's blocks compared with the script's; `updated` is the page with the script's blocks. */
function check(path) {
  const text = readFileSync(path, 'utf8');
  const name = pagePath === undefined ? relative(root, path) : basename(path);
  const shown = new Set();
  const updated = text.replace(PAGE_BLOCK, (whole, head, block, body, tail) => {
    shown.add(block);
    const section = sections.get(block);
    if (section === undefined) {
      problems.push(`${name} block walkthrough:${block} has no "# >>> ${block}" block in ${scriptPath}`);
      return whole;
    }
    if (body !== section) problems.push(`${name} block walkthrough:${block} differs from the script's block`);
    return head + section + tail;
  });
  return { path, text, updated, shown };
}

function fail(lines) {
  console.error(lines.join('\n'));
  process.exit(1);
}
