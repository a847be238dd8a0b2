import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { addRequestExamples } from './openapi.request-examples';
import { closeRequestBodies, nullableCompositions, schemaClasses } from './openapi.schemas';
import { API_KEY_SCHEME } from './shared/auth/access.decorators';
import { ERROR_CATALOG } from './shared/errors/error-catalog';
import { errorExamples } from './shared/http/api-errors.decorator';

const DESCRIPTION = `REST API of the Platform: plugins, agents and workflows.

Authenticate with \`POST /api/auth/login\` and send \`Authorization: Bearer <accessToken>\`, or
with an API key (\`Authorization: Bearer plat_…\`) of a service account or your own. A route
that takes keys says so (security \`api-key\`) and names the scope a key with scopes needs
(\`x-api-key-scope\`); the others need a signed-in user.

Every error is \`{ "error": { "code", "message", "status" } }\` (validation errors add \`details\`).
Lists take \`?limit=\` (1-100, default 20) and \`?cursor=\` and answer \`{ data, nextCursor }\`, newest first.
Every error code, its status and when it is answered: [/api/docs/errors](/api/docs/errors).
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The error catalog as a page of its own, so the Swagger page opens with the endpoints. */
function errorCatalogHtml(): string {
  const rows = Object.entries(ERROR_CATALOG).map(
    ([code, { status, when }]) => `<tr><td><code>${code}</code></td><td>${status}</td><td>${escapeHtml(when)}</td></tr>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform API: error codes</title></head>
<body>
<h1>Error codes</h1>
<p>Every error is <code>{ "error": { "code", "message", "status" } }</code> (validation errors add <code>details</code>). <a href="/api/docs">API docs</a></p>
<table border="1" cellpadding="4" cellspacing="0">
<thead><tr><th>code</th><th>status</th><th>when</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</body></html>
`;
}

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
  closeRequestBodies(document, schemaClasses(app));
  nullableCompositions(document);
  return document;
}

/** UI at /api/docs, JSON at /api/docs-json, the error codes at /api/docs/errors. */
export function setupOpenApi(app: INestApplication): void {
  const page = errorCatalogHtml();
  app.getHttpAdapter().get('/api/docs/errors', (_req: Request, res: Response) => res.type('html').send(page));
  SwaggerModule.setup('api/docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'api/docs-json' });
}
