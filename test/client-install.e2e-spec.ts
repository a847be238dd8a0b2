import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, PASSWORD, TestApp } from './support/test-app';

const ROOT = join(__dirname, '..');
const CLIENT = join(ROOT, 'clients/typescript');
/** The repository's TypeScript compiler, run with this Node.js. */
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a command run as a user outside the repository would run it: without
 * jest's NODE_OPTIONS and without what `npm test` tells its scripts about this package (npm's
 * own settings, the cache and the registry, stay).
 */
function outsideEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
  for (const key of Object.keys(env)) {
    if (/^npm_(package_|lifecycle_|command$|config_local_prefix$)/.test(key)) delete env[key];
  }
  return env;
}

function run(command: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: outsideEnv(), maxBuffer: 16 * 1024 * 1024, timeout: 60000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund'], cwd);
const tsc = (project: string, cwd: string) => run(process.execPath, [TSC, '-p', project], cwd);

function expectOk(ran: Ran, what: string): void {
  if (ran.code !== 0) throw new Error(`${what} failed (${ran.code}):\n${ran.stdout}\n${ran.stderr}`);
}

/**
 * Copies the repository's installed copies of `names` and of their dependencies into
 * `project`/node_modules, as if the project already had them. `npm install <tarball>` in a
 * project without a lockfile resolves the client's `openapi-fetch@^0.17.0` from the registry's
 * full package documents, which the root's `npm ci` does not keep in the npm cache (it installs
 * from the lockfile); with these copies in place npm finds the dependency satisfied and installs
 * with --offline, needing no network.
 */
function seedDependencies(project: string, names: string[]): void {
  for (const name of names) {
    const target = join(project, 'node_modules', name);
    if (existsSync(target)) continue;
    const source = join(ROOT, 'node_modules', name);
    cpSync(source, target, { recursive: true, dereference: true });
    const { dependencies = {} } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    seedDependencies(project, Object.keys(dependencies));
  }
}

/** A project that uses the client as its README says: compiled with strict TypeScript, no DOM or Node.js types beyond fetch's. */
const TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'ES2023',
    lib: ['ES2023', 'DOM'],
    types: [],
    strict: true,
    outDir: 'out',
  },
};

/** CommonJS (the project's package.json has no "type"): signs in, installs a plugin, lists the installed ones, and a wrong password. */
const INDEX_TS = `import { createPlatformClient, PlatformError, signIn, unwrap } from '@platform/client';

declare const process: { argv: string[]; exitCode?: number };

async function main(): Promise<void> {
  const [baseUrl, email, password] = process.argv.slice(2);
  const { client, tokens } = await signIn({ baseUrl, email, password });
  unwrap(await client.POST('/api/plugins/{slug}/install', { params: { path: { slug: 'transform' } }, body: {} }));
  const plugins = unwrap(await client.GET('/api/plugins', { params: { query: { limit: 10 } } }));
  console.log('plugins: ' + plugins.data.map((plugin) => plugin.slug).join(','));

  const withToken = createPlatformClient({ baseUrl, token: tokens.accessToken });
  const me = unwrap(await withToken.GET('/api/auth/me'));
  console.log('me: ' + me.user.email + ' ' + me.user.role);

  try {
    await signIn({ baseUrl, email, password: 'not the password' });
    console.log('wrong password: signed in');
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    console.log('wrong password: ' + error.status + ' ' + error.code);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;

/** An ES module importing the (CommonJS) package by name. */
const ESM_MTS = `import { signIn, unwrap } from '@platform/client';

declare const process: { argv: string[] };

const [baseUrl, email, password] = process.argv.slice(2);
const { client } = await signIn({ baseUrl, email, password });
const plugins = unwrap(await client.GET('/api/plugins'));
console.log('esm plugins: ' + plugins.data.map((plugin) => plugin.slug).join(','));
`;

/** A request body the API refuses: the compile must refuse it too (line 4, name is a string). */
const WRONG_TS = `import { createPlatformClient } from '@platform/client';

const client = createPlatformClient({ baseUrl: 'http://127.0.0.1:3000' });
void client.POST('/api/agents', { body: { name: 1, kind: 'transform.jsonata', config: { expression: '1' } } });
`;

describe('the typed client installs as its README says (npm pack, npm install <tarball>)', () => {
  let t: TestApp;
  let baseUrl: string;
  let work: string;
  let project: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'platform-client-install-'));
    project = join(work, 'project');
    mkdirSync(project);
    const start = async () => {
      t = await createTestApp();
      await t.app.listen(0, '127.0.0.1');
      baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    };
    const packAndInstall = async () => {
      // `prepare` builds dist/ (tsc and schema.d.ts) before npm packs it.
      expectOk(await npm(['pack', '--pack-destination', work], CLIENT), 'npm pack in clients/typescript');
      const [tarball] = readdirSync(work).filter((name) => name.endsWith('.tgz'));
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-the-client', version: '1.0.0', private: true }, null, 2));
      seedDependencies(project, ['openapi-fetch']);
      expectOk(await npm(['install', join(work, tarball), '--offline'], project), `npm install ${tarball}`);
    };
    await Promise.all([start(), packAndInstall()]);
  }, 90000);

  afterAll(async () => {
    await t?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships dist/ built in the tarball, and the project depends on it', () => {
    const installed = join(project, 'node_modules/@platform/client');
    expect(readdirSync(join(installed, 'dist'))).toEqual(expect.arrayContaining(['index.d.ts', 'index.js', 'schema.d.ts']));
    expect(existsSync(join(installed, 'src'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies['@platform/client']).toMatch(/^file:.*platform-client-0\.1\.0\.tgz$/);
  });

  it("compiles a strict TypeScript project against the installed package's types and runs it against the service", async () => {
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['index.ts', 'esm.mts'] }, null, 2));
    writeFileSync(join(project, 'index.ts'), INDEX_TS);
    writeFileSync(join(project, 'esm.mts'), ESM_MTS);
    const compiled = await tsc('tsconfig.json', project);
    expect(compiled.stdout + compiled.stderr).toBe('');
    expect(compiled.code).toBe(0);

    const org = await t.newOrg();
    const cjs = await run(process.execPath, ['out/index.js', baseUrl, org.admin.email, PASSWORD], project);
    expect(cjs.stderr).toBe('');
    expect(cjs.stdout.trim().split('\n')).toEqual([
      'plugins: transform',
      `me: ${org.admin.email} admin`,
      'wrong password: 401 INVALID_CREDENTIALS',
    ]);
    const esm = await run(process.execPath, ['out/esm.mjs', baseUrl, org.viewer.email, PASSWORD], project);
    expect(esm).toMatchObject({ code: 0, stderr: '', stdout: 'esm plugins: transform\n' });
  }, 60000);

  it('refuses to compile a request body of the wrong type', async () => {
    // skipLibCheck: the compile above checked the package's declarations; this one is about the one call.
    const options = { ...TSCONFIG.compilerOptions, noEmit: true, skipLibCheck: true };
    writeFileSync(join(project, 'tsconfig.wrong.json'), JSON.stringify({ compilerOptions: options, files: ['wrong.ts'] }));
    writeFileSync(join(project, 'wrong.ts'), WRONG_TS);
    const compiled = await tsc('tsconfig.wrong.json', project);
    expect(compiled.code).not.toBe(0);
    const errors = compiled.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^wrong\.ts\(4,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
  }, 60000);

  it('a path dependency (file:) links clients/typescript and npm install builds it there (prepare)', async () => {
    const linking = join(work, 'linking');
    mkdirSync(linking);
    const manifest = { name: 'links-the-client', version: '1.0.0', private: true, dependencies: { '@platform/client': `file:${CLIENT}` } };
    writeFileSync(join(linking, 'package.json'), JSON.stringify(manifest, null, 2));
    const built = statSync(join(CLIENT, 'dist/schema.d.ts')).mtimeMs;
    // openapi-fetch resolves from the repository's node_modules (above clients/typescript): nothing to fetch.
    expectOk(await npm(['install', '--offline'], linking), 'npm install (file: dependency)');
    expect(realpathSync(join(linking, 'node_modules/@platform/client'))).toBe(realpathSync(CLIENT));
    expect(statSync(join(CLIENT, 'dist/schema.d.ts')).mtimeMs).toBeGreaterThan(built);
    const loaded = await run(process.execPath, ['-p', "Object.keys(require('@platform/client')).sort().join(',')"], linking);
    expect(loaded).toMatchObject({ code: 0, stdout: 'PlatformError,createPlatformClient,pages,signIn,unwrap\n' });
  }, 60000);
});
