import { INestApplication, Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';

// @nestjs/swagger's metadata keys (its DECORATORS constants).
const MODEL_PROPERTIES = 'swagger/apiModelProperties';
const MODEL_PROPERTIES_ARRAY = 'swagger/apiModelPropertiesArray';
const RESPONSES = 'swagger/apiResponse';
const EXTRA_MODELS = 'swagger/apiExtraModels';

const BUILT_IN = new Set<unknown>([String, Number, Boolean, Object, Array, Date, Symbol, BigInt, Function, Promise, Buffer]);

/** A class the document could name as a schema: a user-defined class, not a built-in. */
function asModel(type: unknown): Type | undefined {
  if (typeof type !== 'function' || BUILT_IN.has(type)) return undefined;
  // `type: () => X` (a lazy reference): an arrow function has no prototype.
  if (!type.prototype) {
    try {
      return asModel((type as () => unknown)());
    } catch {
      return undefined;
    }
  }
  return type as Type;
}

function typesIn(value: unknown): Type[] {
  if (Array.isArray(value)) return value.flatMap(typesIn);
  const model = asModel(value);
  return model ? [model] : [];
}

/** The property names swagger knows on the class (its own and inherited ones). */
function modelProperties(model: Type): string[] {
  const keys = (Reflect.getMetadata(MODEL_PROPERTIES_ARRAY, model.prototype) as string[] | undefined) ?? [];
  return keys.map((key) => key.replace(/^:/, ''));
}

/** Classes a property's `@ApiProperty({ type, items, ... })` refers to. */
function propertyTypes(model: Type, property: string): Type[] {
  const meta = Reflect.getMetadata(MODEL_PROPERTIES, model.prototype, property) as Record<string, unknown> | undefined;
  if (!meta) return [];
  const items = meta.items as { type?: unknown } | undefined;
  return [...typesIn(meta.type), ...typesIn(items?.type), ...typesIn(meta.additionalProperties)];
}

/**
 * Every class the app's OpenAPI document can make a schema of: the parameter types and the
 * `@ApiResponse({ type })` of every route, `@ApiExtraModels`, and every class their
 * `@ApiProperty({ type })` reach, transitively. Swagger names a schema after `class.name`.
 */
export function schemaClasses(app: INestApplication): Type[] {
  const controllers = [...app.get(ModulesContainer).values()].flatMap((module) =>
    [...module.controllers.values()].map((wrapper) => wrapper.metatype as Type),
  );
  const seen = new Set<Type>();
  const visit = (model: Type): void => {
    if (seen.has(model)) return;
    seen.add(model);
    for (const extra of typesIn(Reflect.getMetadata(EXTRA_MODELS, model))) visit(extra);
    for (const property of modelProperties(model)) for (const type of propertyTypes(model, property)) visit(type);
  };
  for (const controller of controllers) {
    for (const extra of typesIn(Reflect.getMetadata(EXTRA_MODELS, controller))) visit(extra);
    let proto: object | null = controller.prototype as object;
    while (proto && proto !== Object.prototype) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const method = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
        if (name === 'constructor' || typeof method !== 'function') continue;
        const params = (Reflect.getMetadata('design:paramtypes', proto, name) as unknown[] | undefined) ?? [];
        for (const type of typesIn(params)) if (modelProperties(type).length > 0) visit(type);
        const responses = (Reflect.getMetadata(RESPONSES, method) as Record<string, { type?: unknown }> | undefined) ?? {};
        for (const response of Object.values(responses)) for (const type of typesIn(response.type)) visit(type);
        for (const extra of typesIn(Reflect.getMetadata(EXTRA_MODELS, method))) visit(extra);
      }
      proto = Object.getPrototypeOf(proto) as object | null;
    }
  }
  return [...seen];
}

/** Names that two or more different classes carry: the document would keep one schema for all of them. */
export function duplicateSchemaNames(classes: Type[]): Record<string, Type[]> {
  const byName = new Map<string, Type[]>();
  for (const model of new Set(classes)) byName.set(model.name, [...(byName.get(model.name) ?? []), model]);
  return Object.fromEntries([...byName].filter(([, models]) => models.length > 1));
}

type SchemaObject = {
  $ref?: string;
  allOf?: SchemaObject[];
  properties?: Record<string, SchemaObject>;
  items?: SchemaObject;
  additionalProperties?: unknown;
  anyOf?: SchemaObject[];
  oneOf?: SchemaObject[];
  nullable?: boolean;
  type?: string;
  enum?: unknown[];
};

/** The component a schema names: directly, as its items, or as its one `allOf` (a nullable reference). */
function refName(schema: SchemaObject | undefined): string | undefined {
  if (!schema) return undefined;
  if (schema.$ref) return schema.$ref.replace('#/components/schemas/', '');
  if (schema.allOf?.length === 1) return refName(schema.allOf[0]);
  return refName(schema.items);
}

/**
 * The global ValidationPipe refuses fields a body class does not declare (`forbidNonWhitelisted`),
 * in the body and in the nested objects it validates (`@ValidateNested`): their schemas say
 * `additionalProperties: false`, so a typed client refuses extra fields too. Nested objects the
 * pipe does not walk into (`@Allow()` any JSON) are left open.
 */
export function closeRequestBodies(document: OpenAPIObject, classes: Type[]): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, SchemaObject>;
  const classByName = new Map(classes.map((model) => [model.name, model]));
  const closed = new Set<string>();
  const close = (name: string | undefined): void => {
    if (!name || closed.has(name) || !schemas[name]) return;
    closed.add(name);
    schemas[name].additionalProperties = false;
    const model = classByName.get(name);
    if (!model) return;
    const nested = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(model, '', true, false)
        .filter((meta) => meta.type === 'nestedValidation')
        .map((meta) => meta.propertyName),
    );
    for (const [property, schema] of Object.entries(schemas[name].properties ?? {})) {
      if (nested.has(property)) close(refName(schema));
    }
  };
  for (const path of Object.values(document.paths)) {
    for (const operation of Object.values(
      path as Record<string, { requestBody?: { content?: Record<string, { schema?: SchemaObject }> } }>,
    )) {
      for (const media of Object.values(operation?.requestBody?.content ?? {})) close(refName(media.schema));
    }
  }
}

/** The schema of `null` alone in OpenAPI 3.0 (which has no `type: null`). */
const NULL_ONLY: SchemaObject = { type: 'object', nullable: true, enum: [null] };

/**
 * Nullable compositions as OpenAPI 3.0 can say them. `@ApiProperty({ type: X, nullable: true })`
 * comes out as `{ nullable: true, allOf: [X] }`, and "any JSON" as `{ nullable: true, oneOf: [...] }`;
 * but `nullable` only widens a `type` in the same schema, so a validator refuses the `null` the
 * service answers. A branch that is `null` alone says it.
 */
export function nullableCompositions(document: OpenAPIObject): void {
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const schema = node as SchemaObject;
    Object.values(schema).forEach(visit);
    if (!schema.nullable) return;
    if (schema.allOf?.length === 1) {
      schema.anyOf = [schema.allOf[0], NULL_ONLY];
      delete schema.allOf;
    } else if (schema.oneOf) schema.oneOf = [...schema.oneOf, NULL_ONLY];
    else if (schema.anyOf) schema.anyOf = [...schema.anyOf, NULL_ONLY];
    else return;
    delete schema.nullable;
    delete schema.type;
  };
  visit(document.components?.schemas);
}
