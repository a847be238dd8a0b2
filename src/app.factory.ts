import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { AppConfig } from './config/app-config';
import { Metrics } from './shared/metrics/metrics';
import { ShutdownDrain } from './modules/operations/shutdown-drain';
import { setupOpenApi } from './openapi.document';
import { envelope } from './shared/errors/error-envelope';
import { serveConsole } from './shared/http/console-static';
import { jsonBody, requestId, storableQuery } from './shared/http/request-body';
import { routeMappingsAtDebug } from './shared/logging/route-mappings-at-debug';

function workerOnly(req: Request, res: Response, next: NextFunction): void {
  if (req.path !== '/api' && !req.path.startsWith('/api/')) return next();
  res.status(404).json(envelope('NOT_FOUND', `No route ${req.method} ${req.path} on a worker process`));
}

/**
 * Everything main.ts and the e2e tests share: the middleware chain in order, the logger and
 * the API docs. The app must be created with `bodyParser: false`; this installs our own.
 * Signals are main.ts's: it drains before it closes the app.
 */
export function configureApp<T extends INestApplication>(app: T): T {
  const config = app.get(AppConfig);
  const express = app as unknown as NestExpressApplication;
  app.useLogger(routeMappingsAtDebug(app.get(Logger)));
  express.set('trust proxy', config.http.trustProxy);
  express.disable('x-powered-by');
  app.use(requestId());
  app.use(app.get(Metrics).middleware());
  app.use(app.get(ShutdownDrain).middleware());
  app.use(helmet());
  // A worker process serves health and metrics only; everything else is not there.
  if (!config.runsApi) app.use(workerOnly);
  app.use(storableQuery());
  for (const handler of jsonBody(config.http.bodyLimitBytes, config.http.inputBodyLimitBytes)) app.use(handler);
  if (config.runsApi) {
    setupOpenApi(app);
    serveConsole(app);
  }
  return app;
}
