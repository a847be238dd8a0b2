import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ClsModule } from 'nestjs-cls';
import { LoggerModule } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { AgentsModule } from './modules/agents/agents.module';
import { CredentialsModule } from './modules/credentials/credentials.module';
import { AuthModule } from './modules/auth/auth.module';
import { McpEndpointModule } from './modules/mcp-endpoint/mcp-endpoint.module';
import { LicensingModule } from './modules/licensing/licensing.module';
import { OperationsModule } from './modules/operations/operations.module';
import { OrganizationsModule } from './modules/organizations/organizations.module';
import { PluginsModule } from './modules/plugins/plugins.module';
import { QueueModule } from './queue/queue.module';
import { ThrottlingModule } from './modules/throttling/throttling.module';
import { UsersModule } from './modules/users/users.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { RunsModule } from './modules/runs/runs.module';
import { TriggersModule } from './modules/triggers/triggers.module';
import { WorkflowsModule } from './modules/workflows/workflows.module';
import { AllExceptionsFilter } from './shared/errors/all-exceptions.filter';
import { validationPipe } from './shared/http/validation';
import { ExpressionsModule } from './shared/expressions/expressions.module';
import { FairnessModule } from './shared/fairness/fairness.module';
import { AuditModule } from './modules/audit/audit.module';
import { MetricsModule } from './shared/metrics/metrics.module';
import { OutboundModule } from './shared/outbound/outbound.module';
import { CryptoModule } from './shared/crypto/crypto.module';

@Module({
  imports: [
    ConfigModule,
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.logLevel,
          // The id was set (or echoed) by the request-id middleware that runs first.
          genReqId: (req) => (req as { id?: string }).id ?? 'unknown',
          customProps: (req) => ({ requestId: (req as { id?: string }).id }),
          redact: {
            paths: [
              'req.headers.authorization',
              'req.headers.cookie',
              'res.headers["set-cookie"]',
              '*.password',
              '*.refreshToken',
              '*.accessToken',
            ],
            censor: '[redacted]',
          },
          serializers: { req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url }) },
        },
      }),
    }),
    DatabaseModule,
    ClsModule.forRoot({
      global: true,
      middleware: { mount: true },
      plugins: [
        new ClsPluginTransactional({
          imports: [DatabaseModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }),
        }),
      ],
    }),
    MetricsModule,
    OutboundModule,
    CryptoModule,
    FairnessModule,
    ExpressionsModule,
    ThrottlingModule,
    LicensingModule,
    UsersModule,
    OrganizationsModule,
    AuthModule,
    CredentialsModule,
    OperationsModule,
    PluginsModule,
    QueueModule,
    AgentsModule,
    WorkflowsModule,
    RunsModule,
    TriggersModule,
    WebhooksModule,
    McpEndpointModule,
    AuditModule,
  ],
  providers: [
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_PIPE, useFactory: validationPipe },
  ],
})
export class AppModule {}
