import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { ClsService } from 'nestjs-cls';
import { AppModule } from './app.module';
import { OrganizationsService } from './modules/organizations/application/organizations.service';
import { isTier, TIERS, UNLICENSED_TIER } from './modules/licensing/domain/tiers';
import { DomainError } from './shared/errors/domain-error';

const USAGE = `Usage:
  npm run cli -- org:create --slug <slug> --name <name> --tier <${TIERS.join('|')}> \\
                            --admin-email <email> --admin-password <password>`;

/** Operator commands for docker-compose admins, run against the configured database. */
async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== 'org:create') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
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
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
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
  } catch (error) {
    if (error instanceof DomainError) {
      process.stderr.write(`${error.code}: ${error.message}\n`);
      return 1;
    }
    throw error;
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
