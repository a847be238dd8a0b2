import { Global, Module } from '@nestjs/common';
import { SeatQuotas } from '../licensing/domain/seat-quotas';
import { TypeOrmSeatQuotas } from './infrastructure/typeorm-seat-quotas';

/**
 * The organizations' seat quotas for licensing. Global, like the licensing module that uses
 * it, because licensing sits under organizations: organizations depends on licensing (and
 * implements its port), never the reverse, and neither module imports the other.
 */
@Global()
@Module({ providers: [{ provide: SeatQuotas, useClass: TypeOrmSeatQuotas }], exports: [SeatQuotas] })
export class OrganizationSeatQuotasModule {}
