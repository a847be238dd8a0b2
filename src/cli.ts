import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { ClsService } from 'nestjs-cls';
import { AppModule } from './app.module';
import { DataFolderInUseError } from './database/embedded-postgres';
import { UpdateUserRequest } from './modules/users/api/user.dto';
import { UsersService } from './modules/users/application/users.service';
import { OrganizationsService } from './modules/organizations/application/organizations.service';
import { isTier, TIERS, UNLICENSED_TIER } from './modules/licensing/domain/tiers';
import { DomainError } from './shared/errors/domain-error';

const USAGE = `Usage:
  npm run cli -- org:create --slug <slug> --name <name> --tier <${TIERS.join('|')}> \\
                            --admin-email <email> --admin-password <password>
  [NEW_PASSWORD=<password>] npm run cli -- user:reset-password <email>
      (without NEW_PASSWORD a strong password is generated and printed)`;

/**
 * Operator commands for docker-compose admins, run against the configured database. With the
 * embedded database (no DATABASE_URL) a command refuses a DATA_DIR a running service holds.
 */
async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  try {
    if (command === 'org:create') return await createOrganization(rest);
    if (command === 'user:reset-password') return await resetPassword(rest);
  } catch (error) {
    if (error instanceof DataFolderInUseError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    if (error instanceof DomainError) {
      process.stderr.write(`${error.code}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

/** The application without its HTTP server; an error while it starts is thrown, not logged. */
async function openApp(): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
  app.useLogger(['error']);
  return app;
}

async function createOrganization(rest: string[]): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      slug: { type: 'string' },
      name: { type: 'string' },
      tier: { type: 'string', default: UNLICENSED_TIER },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
    },
  });
  const missing = ['slug', 'name', 'admin-email', 'admin-password'].filter((k) => !values[k as keyof typeof values]);
  const tier = values.tier;
  if (missing.length || !isTier(tier)) {
    process.stderr.write(
      `${missing.length ? `Missing: ${missing.map((m) => `--${m}`).join(', ')}\n` : `Unknown tier '${values.tier}'\n`}${USAGE}\n`,
    );
    return 2;
  }
  const app = await openApp();
  try {
    const { organization, admin } = await app.get(ClsService).run(() =>
      app.get(OrganizationsService).create({
        slug: values.slug!,
        name: values.name!,
        tier,
        admin: { email: values['admin-email']!, password: values['admin-password']! },
      }),
    );
    process.stdout.write(
      `${JSON.stringify({ id: organization.id, slug: organization.slug, tier: organization.tier, adminUserId: admin.id })}\n`,
    );
    return 0;
  } finally {
    await app.close();
  }
}

/**
 * A new password for the user with this email, under the API's rules (those of PATCH
 * /api/users/:id) and through the same service: it ends the user's sessions and personal API
 * keys as any new password does. NEW_PASSWORD, or a generated one printed on a line of its own.
 */
async function resetPassword(rest: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
  if (positionals.length !== 1) {
    process.stderr.write(`${positionals.length ? 'One email only' : 'Missing: <email>'}\n${USAGE}\n`);
    return 2;
  }
  const [email] = positionals;
  const chosen = process.env.NEW_PASSWORD;
  const password = chosen || randomBytes(18).toString('base64url');
  const problems = await validate(plainToInstance(UpdateUserRequest, { password }));
  if (problems.length) {
    const reasons = problems.flatMap((p) => Object.values(p.constraints ?? {}).map((m) => m.replace(/^password/, 'NEW_PASSWORD')));
    process.stderr.write(`${reasons.join('; ')}\n`);
    return 2;
  }
  const app = await openApp();
  try {
    const user = await app.get(ClsService).run(() => app.get(UsersService).resetPassword(email, password));
    process.stderr.write(`Password of ${user.email} changed; the user's sessions and personal API keys are ended\n`);
    if (!chosen) process.stdout.write(`${password}\n`);
    return 0;
  } finally {
    await app.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
