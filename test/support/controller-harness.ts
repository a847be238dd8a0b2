import { randomUUID } from 'node:crypto';
import { CanActivate, ExecutionContext, INestApplication, Injectable, Provider, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE, Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { Request } from 'express';
import request from 'supertest';
import { RolesGuard } from '../../src/modules/auth/api/roles.guard';
import { PUBLIC_KEY } from '../../src/shared/auth/access.decorators';
import type { Principal, Role } from '../../src/shared/auth/principal';
import type { Scope } from '../../src/shared/auth/scopes';
import { AllExceptionsFilter } from '../../src/shared/errors/all-exceptions.filter';
import { DomainError } from '../../src/shared/errors/domain-error';
import { jsonBody } from '../../src/shared/http/request-body';
import { validationPipe } from '../../src/shared/http/validation';
import { expectError } from './envelope';

/** The header a controller spec names its caller in (JSON of a Principal); nothing else reads it. */
const CALLER_HEADER = 'x-spec-caller';

/**
 * Stands in for the service's AuthGuard: the caller is the principal the spec put in the
 * header. Proving who one is (access tokens, API keys) is the e2e specs' part; what a caller
 * may do once known (roles, scopes, session-only) is the real RolesGuard's, after this one.
 */
@Injectable()
class CallerFromHeader implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const caller = req.headers[CALLER_HEADER];
    if (typeof caller !== 'string') throw new DomainError('UNAUTHORIZED', 'A bearer token is required');
    req.principal = JSON.parse(caller) as Principal;
    return true;
  }
}

/** A caller of one organization: a signed-in user by default, or an API key with `scopes` (null: all the role allows). */
export function caller(role: Role, options: { organizationId?: string; operator?: boolean; scopes?: Scope[] | null } = {}): Principal {
  const userId = randomUUID();
  return {
    userId,
    organizationId: options.organizationId ?? ORGANIZATION_ID,
    role,
    isOperator: options.operator ?? false,
    email: `${role}@spec.example`,
    credential:
      options.scopes === undefined
        ? { type: 'session' }
        : { type: 'api_key', keyId: randomUUID(), serviceAccountId: userId, scopes: options.scopes },
  };
}

/** The organization of callers made without one. */
export const ORGANIZATION_ID = '00000000-0000-4000-8000-000000000001';

export interface ControllerHarness {
  /** A request to the controller as `who` (no caller: unauthenticated). */
  http: (who?: Principal) => {
    get: (url: string) => request.Test;
    post: (url: string) => request.Test;
    patch: (url: string) => request.Test;
    put: (url: string) => request.Test;
    delete: (url: string) => request.Test;
  };
  app: INestApplication;
  close: () => Promise<void>;
}

/**
 * Controllers on their own, for specs of their HTTP contract: routes, request validation (the
 * app's pipe and JSON body parser), roles, scopes and session-only routes (the app's RolesGuard)
 * and the error envelope (the app's filter), with the services they call replaced by fakes.
 * What needs the database, tenant isolation included, stays in the e2e specs.
 */
export async function controllerHarness(controllers: Type[], providers: Provider[]): Promise<ControllerHarness> {
  const moduleRef = await Test.createTestingModule({
    controllers,
    providers: [
      ...providers,
      { provide: APP_GUARD, useClass: CallerFromHeader },
      { provide: APP_GUARD, useClass: RolesGuard },
      { provide: APP_FILTER, useClass: AllExceptionsFilter },
      { provide: APP_PIPE, useFactory: validationPipe },
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: false });
  for (const handler of jsonBody(1024 * 1024)) app.use(handler);
  await app.init();
  const server = app.getHttpServer();
  const as = (test: request.Test, who?: Principal) => (who ? test.set(CALLER_HEADER, JSON.stringify(who)) : test);
  return {
    app,
    http: (who) => ({
      get: (url) => as(request(server).get(url), who),
      post: (url) => as(request(server).post(url), who),
      patch: (url) => as(request(server).patch(url), who),
      put: (url) => as(request(server).put(url), who),
      delete: (url) => as(request(server).delete(url), who),
    }),
    close: () => app.close(),
  };
}

/**
 * The contract of a cursor-paged list route that every role reads (`GET path`, answered by
 * `method` of the faked service): who may call it (every role; an API key only with `scope`)
 * and the query checks made before the service is asked (`filter` is its id filter, a UUID).
 * The cursor itself is the service's to read, so a forged cursor is the e2e specs' to try.
 */
export function describeListRoute(spec: {
  controller: Type;
  service: Type;
  method: string;
  path: string;
  filter: string;
  scope: Scope;
  otherScope: Scope;
}): void {
  describe(`GET ${spec.path}`, () => {
    let harness: ControllerHarness;
    let asked = 0;

    beforeAll(async () => {
      const fake = {
        [spec.method]: async () => {
          asked++;
          return { data: [], nextCursor: null };
        },
      };
      harness = await controllerHarness([spec.controller], [{ provide: spec.service, useValue: fake }]);
    });
    afterAll(() => harness.close());
    beforeEach(() => (asked = 0));

    it(`lets every role read; an API key needs ${spec.scope}`, async () => {
      const allowed = [caller('admin'), caller('member'), caller('viewer'), caller('viewer', { scopes: [spec.scope] })];
      for (const who of allowed) expect((await harness.http(who).get(spec.path)).body).toEqual({ data: [], nextCursor: null });
      expect(asked).toBe(allowed.length);
      expectError(await harness.http().get(spec.path), 401, 'UNAUTHORIZED');
      const refused = await harness.http(caller('admin', { scopes: [spec.otherScope] })).get(spec.path);
      expectError(refused, 403, 'FORBIDDEN');
      expect(refused.body.error.message).toContain(`'${spec.scope}'`);
      expect(asked).toBe(allowed.length);
    });

    it.each(['status=done', 'since=yesterday', `${spec.filter}=nope`, 'limit=101', 'limit=0', 'limit=ten', 'other=1'])(
      'answers 400 in the envelope for %s, before the service is asked',
      async (bad) => {
        expectError(await harness.http(caller('viewer')).get(`${spec.path}?${bad}`), 400, 'VALIDATION_FAILED');
        expect(asked).toBe(0);
      },
    );

    it(`names the field of a ${spec.filter} that is not a UUID`, async () => {
      const res = await harness.http(caller('viewer')).get(`${spec.path}?${spec.filter}=nope`);
      expect(res.body.error.details).toContainEqual({ path: spec.filter, message: `${spec.filter} must be a UUID` });
    });
  });
}
