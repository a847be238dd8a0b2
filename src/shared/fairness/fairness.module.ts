import { Global, Module } from '@nestjs/common';
import { OrganizationShares } from './organization-shares';

/** One OrganizationShares per process, for the queue, the sandbox and the modules. */
@Global()
@Module({ providers: [OrganizationShares], exports: [OrganizationShares] })
export class FairnessModule {}
