import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { DomainError, ErrorDetail } from '../errors/domain-error';

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const compiled = new WeakMap<object, ValidateFunction>();

/** Problems of `value` against a JSON Schema, as envelope details (`path` dotted under `root`). */
export function schemaProblems(schema: object, value: unknown, root: string): ErrorDetail[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? `/${(e.params as { additionalProperty: string }).additionalProperty}` : '';
    const path = [root, ...`${e.instancePath}${extra}`.split('/').filter(Boolean)].join('.');
    return { path, message: `${path} ${e.message ?? 'is not valid'}` };
  });
}

/** Throws VALIDATION_FAILED with every problem, or returns quietly. */
export function assertSchema(schema: object, value: unknown, root: string, what: string): void {
  const details = schemaProblems(schema, value, root);
  if (details.length) throw new DomainError('VALIDATION_FAILED', `${what} is not valid`, details);
}

/** Whether a user-supplied JSON Schema (e.g. an agent's inputSchema) compiles at all. */
export function schemaCompiles(schema: object): string | null {
  try {
    ajv.compile(schema);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}
