import { randomUUID } from 'node:crypto';
import { INestApplication, Type } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { ClsService } from 'nestjs-cls';
import request from 'supertest';
import { configureApp } from '../../src/app.factory';
import { AppModule } from '../../src/app.module';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { AuthService } from '../../src/modules/auth/application/auth.service';
import { OrganizationsService } from '../../src/modules/organizations/application/organizations.service';
import { Tier } from '../../src/modules/licensing/domain/tiers';
import { UsersService } from '../../src/modules/users/application/users.service';
import { PasswordHasher } from '../../src/modules/users/domain/password-hasher';
import { Argon2PasswordHasher } from '../../src/modules/users/infrastructure/argon2-password-hasher';
import { Role } from '../../src/shared/auth/principal';

const TEST_HASHER = new Argon2PasswordHasher({ memoryCost: 1024, timeCost: 1, parallelism: 1 });

export const PASSWORD = 'correct horse battery staple';

export interface TestUser {
  id: string;
  email: string;
  token: string;
  refreshToken: string;
}

export interface TestOrg {
  id: string;
  slug: string;
  admin: TestUser;
  member: TestUser;
  viewer: TestUser;
}

export interface TestApp {
  app: INestApplication;
  http: () => ReturnType<typeof request>;
  /** A fresh organization with one user per role, each with a token: data isolated per test. */
  newOrg: (tier?: Tier) => Promise<TestOrg>;
  addUser: (organizationId: string, role: Role, extra?: { isOperator?: boolean }) => Promise<TestUser>;
  run: <T>(fn: () => Promise<T>) => Promise<T>;
  close: () => Promise<void>;
}

/**
 * Boots the real AppModule with the same configureApp() as main.ts, against the test database.
 * One app at a time per test file: `@Transactional()` finds its TransactionHost through a
 * process-wide instance, which belongs to the newest app.
 */
export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  controllers?: Type[];
  /** Providers replaced by these values (a resolver the test controls, ...). */
  overrides?: Array<{ provide: Type | string | symbol; useValue: unknown }>;
}

export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig({ ...process.env, ...options.env });
  let builder = Test.createTestingModule({ imports: [AppModule], controllers: options.controllers ?? [] })
    .overrideProvider(AppConfig)
    .useValue(config)
    // Test users' passwords are argon2id at a small cost: at the service's, each cost a second
    // on a loaded machine (argon2-password-hasher.spec.ts checks the service's cost).
    .overrideProvider(PasswordHasher)
    .useValue(TEST_HASHER);
  for (const { provide, useValue } of options.overrides ?? []) builder = builder.overrideProvider(provide).useValue(useValue);
  const moduleRef = await builder.compile();
  const app = configureApp(moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false }));
  await app.init();
  const cls = app.get(ClsService);
  const run = <T>(fn: () => Promise<T>) => cls.run(fn);

  const addUser = async (organizationId: string, role: Role, extra: { isOperator?: boolean } = {}): Promise<TestUser> =>
    run(async () => {
      const email = `${role}-${randomUUID().slice(0, 8)}@test.example`;
      const user = await app.get(UsersService).create(organizationId, { email, password: PASSWORD, role, ...extra });
      const pair = await app.get(AuthService).issue(user);
      return { id: user.id, email, token: pair.accessToken, refreshToken: pair.refreshToken };
    });

  const newOrg = async (tier: Tier = 'starter'): Promise<TestOrg> => {
    const slug = `org-${randomUUID().slice(0, 12)}`;
    const { organization } = await run(() =>
      app.get(OrganizationsService).create({ slug, name: slug, tier, admin: { email: `first-${slug}@test.example`, password: PASSWORD } }),
    );
    const [admin, member, viewer] = await Promise.all(
      (['admin', 'member', 'viewer'] as const).map((role) => addUser(organization.id, role)),
    );
    return { id: organization.id, slug, admin, member, viewer };
  };

  return {
    app,
    http: () => request(app.getHttpServer()),
    newOrg,
    addUser,
    run,
    close: () => app.close(),
  };
}

export const bearer = (user: { token: string } | { accessToken: string }) => ({
  Authorization: `Bearer ${'token' in user ? user.token : user.accessToken}`,
});

/** GET /metrics with the token the test setup configured. */
export const scrapeMetrics = (t: Pick<TestApp, 'http'>) =>
  t.http().get('/metrics').set('Authorization', `Bearer ${process.env.METRICS_TOKEN}`);
