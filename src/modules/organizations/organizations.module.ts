import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module';
import { OrganizationsController } from './api/organizations.controller';
import { FirstStartBootstrap } from './application/first-start.bootstrap';
import { OrganizationsService } from './application/organizations.service';
import { OrganizationRepository } from './domain/organization.repository';
import { TypeOrmOrganizationRepository } from './infrastructure/typeorm-organization.repository';

@Module({
  imports: [UsersModule],
  controllers: [OrganizationsController],
  providers: [OrganizationsService, FirstStartBootstrap, { provide: OrganizationRepository, useClass: TypeOrmOrganizationRepository }],
  exports: [OrganizationsService],
})
export class OrganizationsModule {}
