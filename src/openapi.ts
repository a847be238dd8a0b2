import 'reflect-metadata';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { buildOpenApiDocument } from './openapi.document';

/**
 * Writes the OpenAPI document to openapi.json, or with --check fails when the committed one
 * differs from what the code generates. Preview mode: routes are read, nothing is started.
 */
async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { preview: true, logger: false });
  const generated = `${JSON.stringify(buildOpenApiDocument(app), null, 2)}\n`;
  const file = join(__dirname, '..', '..', 'openapi.json');
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(file, 'utf8');
    } catch {
      // missing counts as stale
    }
    if (committed !== generated) {
      process.stderr.write('openapi.json is stale: run `npm run openapi` and commit the result\n');
      process.exit(1);
    }
    process.stdout.write('openapi.json is up to date\n');
  } else {
    writeFileSync(file, generated);
    process.stdout.write(`wrote ${file}\n`);
  }
  await app.close();
}

void main();
