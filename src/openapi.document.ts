import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { errorCatalogMarkdown } from './shared/errors/error-catalog';

const DESCRIPTION = `REST API of the Platform: plugins, agents and workflows.

Authenticate with \`POST /api/auth/login\` and send \`Authorization: Bearer <accessToken>\`.

Every error is \`{ "error": { "code", "message", "status" } }\` (validation errors add \`details\`).
Lists take \`?limit=\` (1-100, default 20) and \`?cursor=\` and answer \`{ data, nextCursor }\`, newest first.

## Error codes

${errorCatalogMarkdown()}
`;

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Platform API')
    .setDescription(DESCRIPTION)
    .setVersion('0.1.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    .build();
  return SwaggerModule.createDocument(app, config);
}

/** UI at /api/docs, JSON at /api/docs-json. */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup('api/docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'api/docs-json' });
}
