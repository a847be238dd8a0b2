import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { SeatQuotas } from '../../licensing/domain/seat-quotas';
import { OrganizationRow } from './organization.orm-entity';

/** Licensing's port, answered from the organizations' own rows (in the caller's transaction). */
@Injectable()
export class TypeOrmSeatQuotas extends SeatQuotas {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  async quotaOf(organizationId: string): Promise<number | null> {
    const row = await this.txHost.tx.getRepository(OrganizationRow).findOne({ select: { seatQuota: true }, where: { id: organizationId } });
    return row?.seatQuota ?? null;
  }
}
