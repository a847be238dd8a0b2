import { Global, Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module';
import { AuditTrail } from '../../shared/audit/audit-trail';
import { AuditEventsController } from './api/audit-events.controller';
import { AuditEventsService } from './application/audit-events.service';
import { AuditLog } from './application/audit-log';
import { AuditEventRepository } from './domain/audit-event';
import { TypeOrmAuditEventRepository } from './infrastructure/typeorm-audit.repository';

/** The audit log: every module records its changes through the AuditTrail port this provides. */
@Global()
@Module({
  imports: [OrganizationsModule],
  controllers: [AuditEventsController],
  providers: [
    AuditEventsService,
    { provide: AuditEventRepository, useClass: TypeOrmAuditEventRepository },
    { provide: AuditTrail, useClass: AuditLog },
  ],
  exports: [AuditTrail],
})
export class AuditModule {}
