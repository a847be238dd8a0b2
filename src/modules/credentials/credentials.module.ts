import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module';
import { UsersModule } from '../users/users.module';
import { ApiKeyStrategy } from './api/api-key.strategy';
import { ApiKeysController } from './api/api-keys.controller';
import { PersonalKeysController } from './api/personal-keys.controller';
import { ServiceAccountsController } from './api/service-accounts.controller';
import { ApiKeyAuthenticator } from './application/api-key-authenticator';
import { ApiKeyFailureLimiter } from './application/api-key-failure-limiter';
import { ApiKeysService } from './application/api-keys.service';
import { ServiceAccountsService } from './application/service-accounts.service';
import { ApiKeyRepository, KeyEventRepository, KeyPolicyRepository, ServiceAccountRepository } from './domain/api-key.repository';
import {
  TypeOrmApiKeyRepository,
  TypeOrmKeyEventRepository,
  TypeOrmKeyPolicyRepository,
  TypeOrmServiceAccountRepository,
} from './infrastructure/typeorm-api-key.repositories';

/** Credentials for scripts and services: service accounts, personal and service-account API keys. */
@Module({
  imports: [UsersModule, OrganizationsModule],
  controllers: [ServiceAccountsController, PersonalKeysController, ApiKeysController],
  providers: [
    ApiKeysService,
    ServiceAccountsService,
    ApiKeyAuthenticator,
    ApiKeyFailureLimiter,
    ApiKeyStrategy,
    { provide: ApiKeyRepository, useClass: TypeOrmApiKeyRepository },
    { provide: ServiceAccountRepository, useClass: TypeOrmServiceAccountRepository },
    { provide: KeyEventRepository, useClass: TypeOrmKeyEventRepository },
    { provide: KeyPolicyRepository, useClass: TypeOrmKeyPolicyRepository },
  ],
})
export class CredentialsModule {}
