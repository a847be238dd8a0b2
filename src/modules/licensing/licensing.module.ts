import { Global, Module } from '@nestjs/common';
import { LicenseController } from './api/license.controller';
import { LicenseVerifier } from './application/license-verifier';
import { LicensingService } from './application/licensing.service';

/** The installation's license: verified offline, and what it grants. */
@Global()
@Module({ controllers: [LicenseController], providers: [LicenseVerifier, LicensingService], exports: [LicensingService, LicenseVerifier] })
export class LicensingModule {}
