#!/usr/bin/env node
/**
 * Writes src/schema.d.ts, the types of every route, from the service's OpenAPI document
 * (../../openapi.json, or the path given after the flags); with --check it writes nothing and
 * fails when src/schema.d.ts is not what the document generates. The options live here only.
 *
 *   node generate.mjs [--check] [openapi.json]
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const check = args.includes('--check');
const document = resolve(args.find((arg) => !arg.startsWith('--')) ?? join(here, '../../openapi.json'));
const cli = join(dirname(createRequire(import.meta.url).resolve('openapi-typescript/package.json')), 'bin/cli.js');

const { status, error } = spawnSync(
  process.execPath,
  [
    cli,
    document,
    ['--output', join(here, 'src/schema.d.ts')],
    // A field with a default is optional in a request (the service fills it in).
    ['--default-non-nullable', 'false'],
    check ? ['--check'] : [],
  ].flat(),
  { stdio: 'inherit' },
);
if (error) throw error;
if (status !== 0 && check)
  console.error('clients/typescript/src/schema.d.ts is stale: run `npm run client:generate` (npm run openapi does it too)');
process.exit(status ?? 1);
