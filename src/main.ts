import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { configureApp } from './app.factory';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { ConfigError, parseEnvironment } from './config/environment';

async function bootstrap(): Promise<void> {
  try {
    parseEnvironment(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const app = configureApp(await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, bufferLogs: true }));
  const config = app.get(AppConfig);
  // Nest's shutdown hooks stop accepting connections, let in-flight requests finish and close
  // the pool; this watchdog ends the process if that takes longer than the grace period.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => setTimeout(() => process.exit(1), config.http.shutdownGraceMs).unref());
  }
  await app.listen(config.http.port, config.http.host);
}

void bootstrap();
