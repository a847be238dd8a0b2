import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { addRequestExamples } from './openapi.request-examples';
import { API_KEY_SCHEME } from './shared/auth/access.decorators';
import { errorCatalogMarkdown } from './shared/errors/error-catalog';
import { errorExamples } from './shared/http/api-errors.decorator';

const DESCRIPTION = `REST API of the Platform: plugins, agents and workflows.

Authenticate with \`POST /api/auth/login\` and send \`Authorization: Bearer <accessToken>\`, or
with an API key (\`Authorization: Bearer plat_…\`) of a service account or your own. A route
that takes keys says so (security \`api-key\`) and names the scope a key with scopes needs
(\`x-api-key-scope\`); the others need a signed-in user.

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
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from /api/auth/login' })
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'plat_…',
        description: 'An API key (`plat_sa_…` or `plat_pk_…`), shown once when created',
      },
      API_KEY_SCHEME,
    )
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components = { ...document.components, examples: { ...document.components?.examples, ...errorExamples() } };
  addRequestExamples(document);
  return document;
}

/** UI at /api/docs, JSON at /api/docs-json. */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup('api/docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'api/docs-json' });
}
