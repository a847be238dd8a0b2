import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { DomainError, ErrorDetail } from '../errors/domain-error';

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const compiled = new WeakMap<object, ValidateFunction>();
/** Schemas read from the database are new objects on every read: compiled ones are kept by text too. */
const compiledByText = new Map<string, ValidateFunction>();
const MAX_COMPILED_BY_TEXT = 1000;

function validatorFor(schema: object): ValidateFunction {
  let validate = compiled.get(schema);
  if (validate) return validate;
  const text = JSON.stringify(schema);
  validate = compiledByText.get(text);
  if (!validate) {
    validate = ajv.compile(withoutId(schema));
    if (compiledByText.size >= MAX_COMPILED_BY_TEXT) compiledByText.delete(compiledByText.keys().next().value!);
    compiledByText.set(text, validate);
  }
  compiled.set(schema, validate);
  return validate;
}

/** Problems of `value` against a JSON Schema, as envelope details (`path` dotted under `root`). */
export function schemaProblems(schema: object, value: unknown, root: string): ErrorDetail[] {
  const validate = validatorFor(schema);
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
    ajv.compile(withoutId(schema));
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** ajv registers a schema under its `$id` and refuses a second with the same one: user schemas are compiled anonymously. */
function withoutId(schema: object): object {
  const { $id: _id, ...rest } = schema as Record<string, unknown>;
  return rest;
}
