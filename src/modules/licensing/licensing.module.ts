import { Global, Module } from '@nestjs/common';
import { LicenseController } from './api/license.controller';
import { LicenseMetrics } from './application/license-metrics';
import { LicenseVerifier } from './application/license-verifier';
import { LicensingService } from './application/licensing.service';
import { LicenseRepository } from './domain/license.repository';
import { TrialRepository } from './domain/trial';
import { TypeOrmLicenseRepository } from './infrastructure/typeorm-license.repository';
import { TypeOrmTrialRepository } from './infrastructure/typeorm-trial.repository';

/**
 * The installation's license: verified offline, and what it grants. Its SeatQuotas port is
 * provided by the organizations module (OrganizationSeatQuotasModule, global like this one).
 */
@Global()
@Module({
  controllers: [LicenseController],
  providers: [
    LicenseVerifier,
    LicensingService,
    LicenseMetrics,
    { provide: LicenseRepository, useClass: TypeOrmLicenseRepository },
    { provide: TrialRepository, useClass: TypeOrmTrialRepository },
  ],
  exports: [LicensingService, LicenseVerifier],
})
export class LicensingModule {}
