import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { OPERATOR_KEY, PUBLIC_KEY, ROLES_KEY } from '../src/shared/auth/access.decorators';
import { createTestApp, TestApp } from './support/test-app';

/** Every route must say who may call it: @Public(), @Roles(...) or @OperatorOnly(). */
describe('route access declarations', () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp()));
  afterAll(() => t.close());

  it('finds no route without an explicit access rule', () => {
    const routes: string[] = [];
    const undeclared: string[] = [];
    const declares = (target: object, key: string) => Reflect.getMetadata(key, target) !== undefined;
    for (const wrapper of t.app.get(DiscoveryService).getControllers()) {
      const controller = wrapper.metatype as { prototype: Record<string, object> } | undefined;
      if (!controller) continue;
      for (const name of t.app.get(MetadataScanner).getAllMethodNames(controller.prototype)) {
        const handler = controller.prototype[name];
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        const route = `${RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler)]} ${Reflect.getMetadata(PATH_METADATA, controller)}/${Reflect.getMetadata(PATH_METADATA, handler)}`;
        routes.push(route);
        const declared = [PUBLIC_KEY, ROLES_KEY, OPERATOR_KEY].some((key) => declares(handler, key) || declares(controller, key));
        if (!declared) undeclared.push(route);
      }
    }
    expect(routes.length).toBeGreaterThanOrEqual(15);
    expect(undeclared).toEqual([]);
  });

  it('keeps public only what must be public', () => {
    const publicRoutes: string[] = [];
    for (const wrapper of t.app.get(DiscoveryService).getControllers()) {
      const controller = wrapper.metatype as { name: string; prototype: Record<string, object> } | undefined;
      if (!controller) continue;
      for (const name of t.app.get(MetadataScanner).getAllMethodNames(controller.prototype)) {
        const handler = controller.prototype[name];
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        if (Reflect.getMetadata(PUBLIC_KEY, handler) || Reflect.getMetadata(PUBLIC_KEY, controller)) publicRoutes.push(`${controller.name}.${name}`);
      }
    }
    expect(publicRoutes.sort()).toEqual(['AuthController.login', 'AuthController.refresh', 'OperationsController.live', 'OperationsController.ready', 'OperationsController.scrape']);
  });
});
