import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { AppConfig } from './config/app-config';
import { Metrics } from './modules/operations/metrics';
import { setupOpenApi } from './openapi.document';
import { jsonBody, requestId } from './shared/http/request-body';

/**
 * Everything main.ts and the e2e tests share: the middleware chain in order, the logger and
 * the API docs. The app must be created with `bodyParser: false`; this installs our own.
 */
export function configureApp<T extends INestApplication>(app: T): T {
  const config = app.get(AppConfig);
  const express = app as unknown as NestExpressApplication;
  app.useLogger(app.get(Logger));
  express.set('trust proxy', config.http.trustProxy);
  express.disable('x-powered-by');
  app.use(requestId());
  app.use(app.get(Metrics).middleware());
  app.use(helmet());
  for (const handler of jsonBody(config.http.bodyLimitBytes)) app.use(handler);
  app.enableShutdownHooks();
  setupOpenApi(app);
  return app;
}
