import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { ANY_SCOPE_KEY, OPERATOR_KEY, PUBLIC_KEY, ROLES_KEY, SCOPE_KEY, SESSION_ONLY_KEY } from '../src/shared/auth/access.decorators';
import { isScope } from '../src/shared/auth/scopes';
import { createTestApp, TestApp } from './support/test-app';

interface Route {
  name: string;
  route: string;
  declares: (key: string) => boolean;
  scope: () => unknown;
}

/** Every route must say who may call it: @Public(), @Roles(...) or @OperatorOnly(). */
describe('route access declarations', () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp()));
  afterAll(() => t.close());

  function routes(): Route[] {
    const found: Route[] = [];
    for (const wrapper of t.app.get(DiscoveryService).getControllers()) {
      const controller = wrapper.metatype as { name: string; prototype: Record<string, object> } | undefined;
      if (!controller) continue;
      for (const method of t.app.get(MetadataScanner).getAllMethodNames(controller.prototype)) {
        const handler = controller.prototype[method];
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        const verb = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        found.push({
          name: `${controller.name}.${method}`,
          route: `${verb} ${Reflect.getMetadata(PATH_METADATA, controller)}/${Reflect.getMetadata(PATH_METADATA, handler)}`,
          declares: (key) => Reflect.getMetadata(key, handler) !== undefined || Reflect.getMetadata(key, controller) !== undefined,
          scope: () => Reflect.getMetadata(SCOPE_KEY, handler) ?? Reflect.getMetadata(SCOPE_KEY, controller),
        });
      }
    }
    return found;
  }

  it('finds no route without an explicit access rule', () => {
    const all = routes();
    expect(all.length).toBeGreaterThanOrEqual(15);
    const undeclared = all.filter((r) => ![PUBLIC_KEY, ROLES_KEY, OPERATOR_KEY].some((key) => r.declares(key))).map((r) => r.route);
    expect(undeclared).toEqual([]);
  });

  it('finds no authenticated route that does not say what an API key needs: a scope, or a session', () => {
    const undeclared = routes()
      .filter((r) => !r.declares(PUBLIC_KEY) && !r.declares(SCOPE_KEY) && !r.declares(ANY_SCOPE_KEY) && !r.declares(SESSION_ONLY_KEY))
      .map((r) => r.route);
    expect(undeclared).toEqual([]);
    const unknownScopes = routes()
      .filter((r) => r.declares(SCOPE_KEY) && !isScope(r.scope()))
      .map((r) => `${r.route}: ${String(r.scope())}`);
    expect(unknownScopes).toEqual([]);
  });

  it('keeps credentials, passwords and operator routes to signed-in users', () => {
    const sessionOnly = routes()
      .filter((r) => r.declares(SESSION_ONLY_KEY))
      .map((r) => r.name);
    expect(sessionOnly).toEqual(
      expect.arrayContaining([
        'AuthController.changePassword',
        'AuthController.logout',
        'PersonalKeysController.create',
        'ServiceAccountsController.createKey',
        'ServiceAccountsController.create',
        'ApiKeysController.setPolicy',
        'OrganizationsController.create',
        'LicenseController.install',
        'SamlController.put',
        'SamlController.remove',
        'OidcController.put',
        'OidcController.remove',
      ]),
    );
  });

  it('keeps public only what must be public', () => {
    const publicRoutes = routes()
      .filter((r) => r.declares(PUBLIC_KEY))
      .map((r) => r.name);
    expect(publicRoutes.sort()).toEqual([
      'AuthController.login',
      'AuthController.refresh',
      'HooksController.receive',
      'OidcController.callback',
      'OidcController.exchange',
      'OidcController.login',
      'OperationsController.home',
      'OperationsController.live',
      'OperationsController.ready',
      'OperationsController.scrape',
      'ProtectedResourceController.metadata',
      'SamlController.acs',
      'SamlController.exchange',
      'SamlController.login',
      'SamlController.metadata',
    'SamlController.sloPost',
    'SamlController.sloRedirect',
    ]);
  });
});
