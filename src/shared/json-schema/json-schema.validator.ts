import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { DomainError, ErrorDetail } from '../errors/domain-error';
import { linearRegexProblem, linearRegExpForAjv } from '../expressions/linear-regex';
import { canonicalJson } from '../json/canonical-json';

/**
 * JSON Schema validation. The service's own schemas (plugin manifests, the workflow
 * definition) compile once each on a plain Ajv. Schemas that tenants write (`inputSchema` of
 * agents and workflows) are untrusted, and validating a member's input against them runs on
 * the API thread, so they get a second Ajv that cannot be made slow:
 * - `pattern` and `patternProperties` run on RE2 (linear time); a pattern RE2 cannot express
 *   (backreferences, lookaround) or one over 1000 characters is refused when saved;
 * - `uniqueItems` is checked in linear time (Ajv's own compares every pair of objects);
 * - a schema is at most MAX_TENANT_SCHEMA_BYTES;
 * - compiled validators live in one bounded LRU; Ajv keeps none of them itself.
 */
export const MAX_TENANT_SCHEMA_BYTES = 64 * 1024;
const TENANT_CACHE_SIZE = 1000;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const ownValidators = new WeakMap<object, ValidateFunction>();

const regExp = Object.assign((pattern: string) => linearRegExpForAjv(pattern), { code: 'linearRegExpForAjv' });

/** An Ajv for tenant schemas: RE2 patterns, a linear uniqueItems, and no schema registry. */
function newTenantAjv(): Ajv {
  const instance = new Ajv({ allErrors: true, strict: false, code: { regExp }, addUsedSchema: false });
  addFormats(instance);
  instance.removeKeyword('uniqueItems');
  instance.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    validate: function unique(wanted: boolean, items: unknown[]): boolean {
      if (!wanted) return true;
      const seen = new Set<string>();
      for (const item of items) {
        const key = canonicalJson(item);
        if (seen.has(key)) {
          (unique as unknown as { errors: unknown[] }).errors = [
            { keyword: 'uniqueItems', message: 'must NOT have duplicate items', params: {} },
          ];
          return false;
        }
        seen.add(key);
      }
      return true;
    },
  });
  return instance;
}

/**
 * Ajv keeps what each compile adds to its code scope (patterns, formats) for the life of the
 * instance; a fresh instance every TENANT_CACHE_SIZE compiles bounds that. Validators already
 * compiled keep working, and go with their instance once the LRU lets them go.
 */
let tenantAjv = newTenantAjv();
let compiledOnTenantAjv = 0;

function compileTenant(schema: object): ValidateFunction {
  if (++compiledOnTenantAjv > TENANT_CACHE_SIZE) {
    tenantAjv = newTenantAjv();
    compiledOnTenantAjv = 1;
  }
  try {
    return tenantAjv.compile(schema);
  } finally {
    tenantAjv.removeSchema(schema);
  }
}

/** Tenant validators by the schema's text: schemas read from the database are new objects on every read. */
const tenantValidators = new LRUCache<string, ValidateFunction>({ max: TENANT_CACHE_SIZE });

/** What the tenant side holds: validators in the LRU, and schemas and code-scope values in the current Ajv (for the memory check). */
export function compiledSchemaCounts(): { validators: number; ajvSchemas: number; ajvScopeValues: number } {
  const internals = tenantAjv as unknown as { _cache: Map<unknown, unknown>; scope: { _values: Record<string, Map<unknown, unknown>> } };
  const scopeValues = Object.values(internals.scope._values).reduce((sum, values) => sum + values.size, 0);
  return { validators: tenantValidators.size, ajvSchemas: internals._cache.size, ajvScopeValues: scopeValues };
}

function ownValidator(schema: object): ValidateFunction {
  let validate = ownValidators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    ownValidators.set(schema, validate);
  }
  return validate;
}

function tenantValidator(schema: object): ValidateFunction {
  const text = JSON.stringify(schema);
  let validate = tenantValidators.get(text);
  if (!validate) {
    validate = compileTenant(withoutId(schema));
    tenantValidators.set(text, validate);
  }
  return validate;
}

function problemsOf(validate: ValidateFunction, value: unknown, root: string): ErrorDetail[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? `/${(e.params as { additionalProperty: string }).additionalProperty}` : '';
    const path = [root, ...`${e.instancePath}${extra}`.split('/').filter(Boolean)].join('.');
    return { path, message: `${path} ${e.message ?? 'is not valid'}` };
  });
}

/** Problems of `value` against one of the service's own schemas, as envelope details (`path` dotted under `root`). */
export function schemaProblems(schema: object, value: unknown, root: string): ErrorDetail[] {
  return problemsOf(ownValidator(schema), value, root);
}

/**
 * Problems of `value` against a schema a tenant wrote (checked with `tenantSchemaProblems` when
 * it was saved), on the tenant validator: linear-time patterns, one cached compile per schema text.
 */
export function tenantValueProblems(schema: object, value: unknown, root: string): ErrorDetail[] {
  return problemsOf(tenantValidator(schema), value, root);
}

/** Throws VALIDATION_FAILED with every problem of `value` against a tenant's schema, or returns quietly. */
export function assertTenantSchema(schema: object, value: unknown, root: string, what: string): void {
  const details = tenantValueProblems(schema, value, root);
  if (details.length) throw new DomainError('VALIDATION_FAILED', `${what} is not valid`, details);
}

/** Throws VALIDATION_FAILED with every problem of `value` against one of the service's own schemas. */
export function assertSchema(schema: object, value: unknown, root: string, what: string): void {
  const details = schemaProblems(schema, value, root);
  if (details.length) throw new DomainError('VALIDATION_FAILED', `${what} is not valid`, details);
}

/**
 * Why a tenant's JSON Schema (an agent's or workflow's inputSchema) cannot be stored, with
 * paths under `root`: its size, each pattern RE2 cannot run, or that it does not compile.
 */
export function tenantSchemaProblems(schema: object, root: string): ErrorDetail[] {
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_TENANT_SCHEMA_BYTES)
    return [{ path: root, message: `${root} is ${bytes} bytes; the limit is ${MAX_TENANT_SCHEMA_BYTES}` }];
  const problems: ErrorDetail[] = [];
  for (const { path, pattern } of patternsOf(schema, root)) {
    const problem = linearRegexProblem(pattern);
    if (problem) problems.push({ path, message: `${path} cannot be used: ${problem}` });
  }
  if (problems.length) return problems;
  try {
    tenantValidator(schema);
    return [];
  } catch (error) {
    return [{ path: root, message: `${root} is not a valid JSON Schema: ${(error as Error).message}` }];
  }
}

/** Every `pattern` value and `patternProperties` key of a schema, with its dotted path. */
function patternsOf(schema: unknown, root: string): Array<{ path: string; pattern: string }> {
  const found: Array<{ path: string; pattern: string }> = [];
  const stack: Array<{ node: unknown; path: string }> = [{ node: schema, path: root }];
  while (stack.length) {
    const { node, path } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    for (const [key, child] of Object.entries(node)) {
      const at = Array.isArray(node) ? `${path}[${key}]` : `${path}.${key}`;
      if (key === 'pattern' && typeof child === 'string') found.push({ path: at, pattern: child });
      if (key === 'patternProperties' && child !== null && typeof child === 'object' && !Array.isArray(child))
        for (const pattern of Object.keys(child)) found.push({ path: `${at}.${pattern}`, pattern });
      stack.push({ node: child, path: at });
    }
  }
  return found.reverse();
}

/** ajv registers a schema under its `$id` and refuses a second with the same one: tenant schemas are compiled anonymously. */
function withoutId(schema: object): object {
  const { $id: _id, ...rest } = schema as Record<string, unknown>;
  return rest;
}
