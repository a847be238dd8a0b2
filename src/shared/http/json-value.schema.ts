import type { SchemaObject } from '@nestjs/swagger';

/**
 * The OpenAPI schema of a field that holds any JSON value (an input, an output): without it the
 * document would say `type: object` for a TypeScript `unknown`, and a client generated from it
 * would refuse a string or a list. Spread into `@ApiProperty({ ...ANY_JSON, description })`.
 */
export const ANY_JSON: { oneOf: SchemaObject[] } = {
  oneOf: [
    { type: 'object', additionalProperties: true },
    { type: 'array', items: {} },
    { type: 'string' },
    { type: 'number' },
    { type: 'boolean' },
  ],
};
