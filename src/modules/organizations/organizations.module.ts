import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module';
import { OrganizationsController } from './api/organizations.controller';
import { SubscriptionController } from './api/subscription.controller';
import { FirstStartBootstrap } from './application/first-start.bootstrap';
import { SubscriptionService } from './application/subscription.service';
import { OrganizationsService } from './application/organizations.service';
import { OrganizationRepository } from './domain/organization.repository';
import { HistoryRetention } from './infrastructure/history-retention';
import { TypeOrmOrganizationRepository } from './infrastructure/typeorm-organization.repository';
import { OrganizationSeatQuotasModule } from './seat-quotas.module';

@Module({
  imports: [UsersModule, OrganizationSeatQuotasModule],
  controllers: [OrganizationsController, SubscriptionController],
  providers: [
    OrganizationsService,
    SubscriptionService,
    FirstStartBootstrap,
    HistoryRetention,
    { provide: OrganizationRepository, useClass: TypeOrmOrganizationRepository },
  ],
  exports: [OrganizationsService, SubscriptionService, OrganizationRepository],
})
export class OrganizationsModule {}
