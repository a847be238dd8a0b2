import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApiProperty, OpenAPIObject } from '@nestjs/swagger';
import { AppModule } from './app.module';
import { buildOpenApiDocument } from './openapi.document';
import { duplicateSchemaNames, schemaClasses } from './openapi.schemas';

/** The document as `npm run openapi` builds it: preview mode, routes read, nothing started. */
describe('the OpenAPI document', () => {
  let app: INestApplication;
  let document: OpenAPIObject;

  beforeAll(async () => {
    app = await NestFactory.create(AppModule, { preview: true, logger: false });
    document = buildOpenApiDocument(app);
  });
  afterAll(() => app.close());

  const schemas = () => document.components!.schemas as Record<string, Record<string, unknown>>;

  it('names every schema after one class only: swagger would keep one of two same-named classes silently', () => {
    const classes = schemaClasses(app);
    const duplicates = Object.entries(duplicateSchemaNames(classes)).map(([name, models]) => `${name} (${models.length} classes)`);
    expect(duplicates).toEqual([]);
    // The walk reaches every schema of the document (else a duplicate could hide in what it misses).
    const names = new Set(classes.map((model) => model.name));
    expect(Object.keys(schemas()).filter((name) => !names.has(name))).toEqual([]);
  });

  it('finds two classes of one name', () => {
    const same = () => {
      class Same {
        @ApiProperty() a!: string;
      }
      return Same;
    };
    const [first, second] = [same(), same()];
    class Holder {
      @ApiProperty({ type: () => first }) one!: unknown;
      @ApiProperty({ type: [second] }) many!: unknown[];
    }
    expect(Object.keys(duplicateSchemaNames([Holder, first, second]))).toEqual(['Same']);
  });

  it("points a run's and an execution's triggeredBy at TriggeredByResponse, not at the webhook trigger", () => {
    for (const name of ['RunResponse', 'ExecutionResponse']) {
      const properties = schemas()[name].properties as Record<string, { $ref?: string; allOf?: Array<{ $ref: string }> }>;
      const ref = properties.triggeredBy.$ref ?? properties.triggeredBy.allOf?.[0].$ref;
      expect(ref).toBe('#/components/schemas/TriggeredByResponse');
    }
    expect(schemas().TriggerResponse.properties).toHaveProperty('url');
  });

  it('requires steps in one run, not in a list of runs', () => {
    const get = document.paths['/api/workflows/{id}/runs/{runId}'].get!;
    const schema = (get.responses['200'] as { content: Record<string, { schema: { $ref: string } }> }).content['application/json'].schema;
    const name = schema.$ref.replace('#/components/schemas/', '');
    expect(schemas()[name].required).toContain('steps');
    expect(schemas().RunResponse.required).not.toContain('steps');
  });

  it('closes every JSON request body: the validation pipe refuses unknown fields', () => {
    const bodies: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(
        item as Record<string, { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } }>,
      )) {
        const ref = operation.requestBody?.content?.['application/json']?.schema?.$ref;
        if (!ref) continue;
        const name = ref.replace('#/components/schemas/', '');
        bodies.push(name);
        expect({ operation: `${method.toUpperCase()} ${path}`, additionalProperties: schemas()[name].additionalProperties }).toEqual({
          operation: `${method.toUpperCase()} ${path}`,
          additionalProperties: false,
        });
      }
    }
    expect(bodies.length).toBeGreaterThan(10);
    // Response-only schemas stay open.
    expect(schemas().RunResponse.additionalProperties).toBeUndefined();
  });
});
