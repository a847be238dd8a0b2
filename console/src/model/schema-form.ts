/**
 * A form from a JSON Schema (a wait's `schema`, a workflow's `inputSchema`): one field per
 * property of an object schema, typed by the property's `type` (or `enum`), required as the
 * schema says. What the form cannot show as a field (nested objects, arrays, a schema that is
 * not an object) is one JSON field. The server validates the answer against the whole schema;
 * the form only keeps a person from sending what is plainly wrong.
 */
export type FieldKind = 'text' | 'number' | 'integer' | 'boolean' | 'choice' | 'json';

export interface FormField {
  /** The property's name ('' for a schema shown as one JSON field). */
  name: string;
  label: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  /** For `choice`: the values, as the schema gives them. */
  options?: unknown[];
  /** The value the field starts with, as text (a checkbox: 'true' or ''). */
  initial: string;
}

interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  const?: unknown;
}

/** The fields of `schema`'s form, in the order its properties are written. */
export function formFields(schema: unknown): FormField[] {
  const root = (schema ?? {}) as JsonSchema;
  if (!isObjectSchema(root))
    return [{ name: '', label: root.title ?? 'Value (JSON)', kind: 'json', required: true, initial: initialText(root, 'json') }];
  const required = new Set(root.required ?? []);
  return Object.entries(root.properties ?? {}).map(([name, property]) => {
    const kind = kindOf(property);
    return {
      name,
      label: property.title ?? name,
      kind,
      required: required.has(name),
      ...(property.description ? { description: property.description } : {}),
      ...(kind === 'choice' ? { options: property.enum } : {}),
      initial: initialText(property, kind),
    };
  });
}

export interface FormResult {
  /** The value to send, when every field is well formed. */
  value?: unknown;
  /** Field name to what is wrong with it. */
  problems: Record<string, string>;
}

/** The value the form's texts make, or what is wrong with them. */
export function formValue(fields: FormField[], texts: Record<string, string>): FormResult {
  const problems: Record<string, string> = {};
  const value: Record<string, unknown> = {};
  for (const field of fields) {
    const text = texts[field.name] ?? field.initial;
    if (field.kind === 'boolean') {
      value[field.name] = text === 'true';
      continue;
    }
    if (text.trim() === '') {
      if (field.required) problems[field.name] = 'Required';
      continue;
    }
    const parsed = parse(field, text);
    if ('problem' in parsed) problems[field.name] = parsed.problem;
    else value[field.name] = parsed.value;
  }
  if (Object.keys(problems).length) return { problems };
  if (fields.length === 1 && fields[0].name === '') return { value: value[''], problems };
  return { value, problems };
}

function parse(field: FormField, text: string): { value: unknown } | { problem: string } {
  switch (field.kind) {
    case 'number':
    case 'integer': {
      const number = Number(text);
      if (!Number.isFinite(number)) return { problem: 'Not a number' };
      if (field.kind === 'integer' && !Number.isInteger(number)) return { problem: 'Not a whole number' };
      return { value: number };
    }
    case 'choice': {
      const option = field.options?.find((o) => String(o) === text);
      return option === undefined ? { problem: 'Not one of the choices' } : { value: option };
    }
    case 'json':
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        return { problem: 'Not valid JSON' };
      }
    default:
      return { value: text };
  }
}

function isObjectSchema(schema: JsonSchema): boolean {
  return (schema.type === 'object' || (!schema.type && !!schema.properties)) && !!schema.properties;
}

function kindOf(property: JsonSchema): FieldKind {
  if (Array.isArray(property.enum) && property.enum.length) return 'choice';
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type;
  if (type === 'string') return 'text';
  if (type === 'number') return 'number';
  if (type === 'integer') return 'integer';
  if (type === 'boolean') return 'boolean';
  return 'json';
}

function initialText(property: JsonSchema, kind: FieldKind): string {
  const start = property.default ?? property.const;
  if (start === undefined) return '';
  if (kind === 'boolean') return start === true ? 'true' : '';
  if (kind === 'json') return JSON.stringify(start, null, 2);
  return String(start);
}
