import 'reflect-metadata';
import type { Server } from 'node:http';
import { INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { configureApp } from './app.factory';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { ConfigError, parseEnvironment } from './config/environment';
import { startupLine } from './config/startup-line';
import { DataFolderInUseError } from './database/embedded-postgres';
import { LicensingService } from './modules/licensing/application/licensing.service';
import { ProcessFailures } from './modules/operations/process-failures';
import { ShutdownDrain } from './modules/operations/shutdown-drain';

async function bootstrap(): Promise<void> {
  parseEnvironment(process.env);
  const app = configureApp(
    await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, bufferLogs: true, abortOnError: false }),
  );
  const config = app.get(AppConfig);
  let stopping: Promise<void> | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopping ??= shutDown(app, config, signal);
    });
  }
  await app.listen(config.http.port, config.http.host);
  const trial = config.trial ? (await app.get(LicensingService).state()).trial : null;
  new Logger('Platform').log(startupLine(config, (app.getHttpServer() as Server).address(), trial));
  // Only now: until here an unexpected failure is a failed boot, and it ends the process.
  app.get(ProcessFailures).watch();
}

/**
 * On SIGTERM or SIGINT an API process first drains (readiness 503 while requests are still
 * served, SHUTDOWN_DRAIN_MS); then Nest's shutdown stops accepting connections, closes the idle
 * ones, lets in-flight requests and running agent attempts finish and closes the pool. A
 * watchdog ends the process if all of it takes longer than SHUTDOWN_GRACE_MS.
 */
async function shutDown(app: INestApplication, config: AppConfig, signal: NodeJS.Signals): Promise<void> {
  setTimeout(() => process.exit(1), config.http.shutdownGraceMs).unref();
  try {
    await app.get(ShutdownDrain).drain();
    await app.close();
  } catch (error) {
    new Logger('Shutdown').error(error);
    process.exit(1);
  }
  // The listener is gone (once): the signal now ends the process, and its status says how.
  process.kill(process.pid, signal);
}

// A configuration error, at parse time or found at boot (a LICENSE_KEY that does not verify), or
// a DATA_DIR another process holds: one line naming the variable and the reason, and exit 1.
bootstrap().catch((error: unknown) => {
  if (!(error instanceof ConfigError) && !(error instanceof DataFolderInUseError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
