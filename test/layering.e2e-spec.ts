import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * `npm run lint:layers` on small planted trees: each rule of .dependency-cruiser.cjs fails on
 * the one violation made for it (and on nothing else), scripts/check-module-cycles.mjs fails on
 * modules that import each other through files that do not, and a clean tree passes both.
 */
const ROOT = resolve(__dirname, '..');
const DEPCRUISE = realpathSync(join(ROOT, 'node_modules/.bin/depcruise'));
const MODULE_CYCLES = join(ROOT, 'scripts/check-module-cycles.mjs');
/** dependency-cruiser needs Node 22 or 24: the pinned one when it is installed. */
const NODE = existsSync(join(ROOT, 'node_modules/node/bin/node')) ? join(ROOT, 'node_modules/node/bin/node') : process.execPath;

type Tree = Record<string, string>;

/** Every part the rules name, importing only the ways they allow. */
const CLEAN: Tree = {
  'tsconfig.json': JSON.stringify({
    compilerOptions: { module: 'commonjs', target: 'ES2023', strict: true, experimentalDecorators: true },
    include: ['src', 'test'],
  }),
  'src/shared/x.ts': `export const shared = 'x';\n`,
  'src/database/y.ts': `import { shared } from '../shared/x';\nexport const table = \`\${shared}_things\`;\n`,
  'src/modules/a/domain/thing.ts': [
    `import { shared } from '../../../shared/x';`,
    `export const prefix = shared;`,
    `export abstract class ThingStore {`,
    `  abstract save(name: string): Promise<void>;`,
    `}`,
  ].join('\n'),
  'src/modules/a/application/things.service.ts': [
    `import { ThingStore } from '../domain/thing';`,
    `export class ThingsService {`,
    `  constructor(private readonly store: ThingStore) {}`,
    `  create(name: string) { return this.store.save(name); }`,
    `}`,
  ].join('\n'),
  'src/modules/a/application/things.service.spec.ts': `import { seed } from '../../../../test/support/seed';\nexport const spec = seed;\n`,
  'src/modules/a/infrastructure/sql-thing.store.ts': [
    `import { table } from '../../../database/y';`,
    `import { ThingStore } from '../domain/thing';`,
    `export class SqlThingStore extends ThingStore {`,
    `  async save(name: string) { void [table, name]; }`,
    `}`,
  ].join('\n'),
  'src/modules/a/api/things.controller.ts': [
    `import { Controller } from '@nestjs/common';`,
    `import { ThingsService } from '../application/things.service';`,
    `@Controller('things')`,
    `export class ThingsController {`,
    `  constructor(readonly things: ThingsService) {}`,
    `}`,
  ].join('\n'),
  'src/modules/a/a.module.ts': [
    `import { ThingsController } from './api/things.controller';`,
    `import { SqlThingStore } from './infrastructure/sql-thing.store';`,
    `export const A_MODULE = [ThingsController, SqlThingStore];`,
  ].join('\n'),
  'src/modules/b/domain/other.ts': `export interface Other { name: string }\n`,
  'src/modules/b/application/others.service.ts': [
    `import { ThingsService } from '../../a/application/things.service';`,
    `import { Other } from '../domain/other';`,
    `export class OthersService {`,
    `  constructor(private readonly things: ThingsService) {}`,
    `  add(other: Other) { return this.things.create(other.name); }`,
    `}`,
  ].join('\n'),
  'src/modules/b/infrastructure/other.store.ts': `import { table } from '../../../database/y';\nexport const otherTable = table;\n`,
  'src/modules/b/api/others.controller.ts': [
    `import { OthersService } from '../application/others.service';`,
    `import { ThingResponse } from '../../a/thing.response';`,
    `export const controller = [OthersService, ThingResponse];`,
  ].join('\n'),
  'src/modules/a/thing.response.ts': `import { prefix } from './domain/thing';\nexport class ThingResponse { name = prefix; }\n`,
  'src/modules/b/catalog/built-in.ts': `export const builtIn = 'b';\n`,
  'test/support/seed.ts': `export const seed = 1;\n`,
};

const fixtures: string[] = [];
afterAll(() => {
  for (const dir of fixtures) rmSync(dir, { recursive: true, force: true });
});

/** Writes CLEAN with `changes` on top (added or replaced files) into a temp directory with a copy of the rules. */
function fixture(changes: Tree = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'layering-'));
  fixtures.push(dir);
  for (const [file, text] of Object.entries({ ...CLEAN, ...changes })) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  copyFileSync(join(ROOT, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  return dir;
}

function run(cwd: string, args: string[]): { status: number | null; output: string } {
  const result = spawnSync(NODE, args, { cwd, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** `depcruise src` as lint:layers runs it, with the rule names it reports. */
function depcruise(cwd: string) {
  const result = run(cwd, [DEPCRUISE, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'err']);
  const rules = [...new Set([...result.output.matchAll(/^\s*error ([\w-]+): /gm)].map((m) => m[1]))];
  return { ...result, rules };
}

const moduleCycles = (cwd: string) => run(cwd, [MODULE_CYCLES]);

describe('the dependency rules (.dependency-cruiser.cjs)', () => {
  it('pass a tree that keeps to them', () => {
    const result = depcruise(fixture());
    expect(result.rules).toEqual([]);
    expect(result.output).toContain('no dependency violations found');
    expect(result.status).toBe(0);
  });

  it.each<[string, string, Tree]>([
    [
      'domain-is-plain',
      'a domain file importing @nestjs/common',
      {
        'src/modules/a/domain/thing-rules.ts': `import { Injectable } from '@nestjs/common';\n@Injectable()\nexport class ThingRules {}\n`,
      },
    ],
    [
      'domain-is-plain',
      'a domain file importing nestjs-cls',
      { 'src/modules/a/domain/context.ts': `import { ClsService } from 'nestjs-cls';\nexport type Context = ClsService;\n` },
    ],
    [
      'application-through-ports',
      'application importing its own infrastructure',
      {
        'src/modules/a/application/shortcut.ts': `import { SqlThingStore } from '../infrastructure/sql-thing.store';\nexport const store = new SqlThingStore();\n`,
      },
    ],
    [
      'modules-keep-their-adapters',
      "module a importing module b's infrastructure",
      {
        'src/modules/a/infrastructure/reach.ts': `import { otherTable } from '../../b/infrastructure/other.store';\nexport const reach = otherTable;\n`,
      },
    ],
    [
      'modules-keep-their-adapters',
      "module a importing module b's api",
      { 'src/modules/a/api/reach.ts': `import { controller } from '../../b/api/others.controller';\nexport const reach = controller;\n` },
    ],
    [
      'modules-meet-at-published-parts',
      "module a importing a file of module b's own folders",
      { 'src/modules/a/application/reach.ts': `import { builtIn } from '../../b/catalog/built-in';\nexport const reach = builtIn;\n` },
    ],
    [
      'core-imports-no-module',
      'shared importing a module',
      { 'src/shared/leak.ts': `import { prefix } from '../modules/a/domain/thing';\nexport const leak = prefix;\n` },
    ],
    [
      'no-cycles',
      'two files importing each other',
      {
        'src/modules/a/domain/ping.ts': `import { pong } from './pong';\nexport const ping = () => pong;\n`,
        'src/modules/a/domain/pong.ts': `import { ping } from './ping';\nexport const pong = () => ping;\n`,
      },
    ],
    [
      'no-test-support-in-src',
      'a shipped file importing test/support',
      { 'src/modules/a/infrastructure/seeded.ts': `import { seed } from '../../../../test/support/seed';\nexport const seeded = seed;\n` },
    ],
  ])('%s fails %s', (rule, _what, planted) => {
    const result = depcruise(fixture(planted));
    expect(result.rules).toEqual([rule]);
    for (const file of Object.keys(planted)) expect(result.output).toContain(file);
    expect(result.status).not.toBe(0);
  });
});

describe('the module-cycle check (scripts/check-module-cycles.mjs)', () => {
  /** a -> b (b/application uses a/application, as in CLEAN) and b -> a through other files: no file cycle. */
  const aUsesB: Tree = {
    'src/modules/a/domain/thing.ts': `import { Other } from '../../b/domain/other';\n${CLEAN['src/modules/a/domain/thing.ts']}\nexport type Named = Other;\n`,
  };

  it('passes a tree whose parts import one way', () => {
    const result = moduleCycles(fixture());
    expect(result.output).toMatch(/no cycles between the 4 parts of src/);
    expect(result.status).toBe(0);
  });

  it('fails modules a and b importing each other through different files', () => {
    const dir = fixture(aUsesB);
    expect(depcruise(dir)).toMatchObject({ status: 0, rules: [] });
    const result = moduleCycles(dir);
    expect(result.output).toContain('error module-cycle: modules/a ↔ modules/b');
    expect(result.output).toContain('src/modules/a/domain/thing.ts → src/modules/b/domain/other.ts');
    expect(result.output).toMatch(/src\/modules\/b\/\S+ → src\/modules\/a\//);
    expect(result.status).toBe(1);
  });
});
