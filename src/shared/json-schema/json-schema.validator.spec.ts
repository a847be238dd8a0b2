import { DomainError } from '../errors/domain-error';
import { assertTenantSchema, compiledSchemaCounts, MAX_TENANT_SCHEMA_BYTES, tenantSchemaProblems } from './json-schema.validator';

describe('tenant JSON Schemas', () => {
  it('keeps at most 1,000 compiled validators, and Ajv no more, over 5,000 distinct schemas saved and used', () => {
    const before = compiledSchemaCounts();
    for (let i = 0; i < 5000; i++) {
      const schema = {
        $id: `s${i}`,
        type: 'object',
        required: [`field${i}`],
        properties: { [`field${i}`]: { type: 'string', pattern: `^x${i}` } },
      };
      expect(tenantSchemaProblems(schema, 'inputSchema')).toEqual([]);
      assertTenantSchema(schema, { [`field${i}`]: `x${i}y` }, 'input', 'input');
    }
    const after = compiledSchemaCounts();
    expect(after.validators).toBe(1000);
    expect(after.ajvSchemas).toBe(before.ajvSchemas);
    // Each schema adds ~3 values (its pattern, the engine) to the code scope of the Ajv it was
    // compiled on: ~15,000 for 5,000 schemas on one Ajv; a fresh Ajv every 1,000 compiles bounds them.
    expect(after.ajvScopeValues).toBeLessThanOrEqual(before.ajvScopeValues + 4 * 1000);
  });

  it('names every pattern RE2 cannot run, under its path', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', pattern: '(?=x)' }, b: { type: 'array', items: [{ pattern: '(a)\\1' }] } },
      patternProperties: { '^ok$': {}, '(?<!x)y': {} },
    };
    expect(tenantSchemaProblems(schema, 'inputSchema').map((p) => p.path)).toEqual([
      'inputSchema.properties.a.pattern',
      'inputSchema.properties.b.items[0].pattern',
      'inputSchema.patternProperties.(?<!x)y',
    ]);
  });

  it('refuses a pattern over 1,000 characters and a schema over the size limit', () => {
    expect(tenantSchemaProblems({ pattern: 'a'.repeat(1001) }, 's')[0].message).toMatch(/the limit is 1000/);
    const big = { description: 'x'.repeat(MAX_TENANT_SCHEMA_BYTES) };
    expect(tenantSchemaProblems(big, 's')).toEqual([{ path: 's', message: expect.stringMatching(/the limit is 65536/) as unknown }]);
  });

  it('reports a schema that does not compile', () => {
    expect(tenantSchemaProblems({ type: 'nonsense' }, 'inputSchema')).toEqual([
      { path: 'inputSchema', message: expect.stringMatching(/^inputSchema is not a valid JSON Schema: /) as unknown },
    ]);
  });

  it('answers a duplicate in uniqueItems, for objects whatever their key order', () => {
    const schema = { type: 'array', uniqueItems: true };
    expect(() => assertTenantSchema(schema, [{ a: 1, b: 2 }, { a: 2 }], 'input', 'input')).not.toThrow();
    let error: unknown;
    try {
      assertTenantSchema(
        schema,
        [
          { a: 1, b: 2 },
          { b: 2, a: 1 },
        ],
        'input',
        'The input',
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: 'input', message: 'input must NOT have duplicate items' }],
    });
  });
});
