import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { configureApp } from './app.factory';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { ConfigError, parseEnvironment } from './config/environment';

async function bootstrap(): Promise<void> {
  parseEnvironment(process.env);
  const app = configureApp(await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, bufferLogs: true }));
  const config = app.get(AppConfig);
  // Nest's shutdown hooks stop accepting connections, let in-flight requests finish and close
  // the pool; this watchdog ends the process if that takes longer than the grace period.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => setTimeout(() => process.exit(1), config.http.shutdownGraceMs).unref());
  }
  await app.listen(config.http.port, config.http.host);
}

// A configuration error, at parse time or found at boot (a LICENSE_KEY that does not verify):
// one line naming the variable and the reason, and exit 1.
bootstrap().catch((error: unknown) => {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
