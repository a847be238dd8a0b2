import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { LicenseRepository, StoredLicense } from '../domain/license.repository';
import { LicenseRow } from './license.orm-entity';

/** The one row of installation_license has id 1. */
const ID = 1;

@Injectable()
export class TypeOrmLicenseRepository extends LicenseRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(LicenseRow);
  }

  async find(): Promise<StoredLicense | null> {
    const row = await this.rows.findOneBy({ id: ID });
    return row ? { key: row.key, installedBy: row.installedBy, installedAt: row.installedAt } : null;
  }

  async replace(license: StoredLicense): Promise<void> {
    await this.rows.upsert({ id: ID, ...license }, ['id']);
  }

  async remove(): Promise<boolean> {
    const result = await this.rows.delete({ id: ID });
    return (result.affected ?? 0) > 0;
  }
}
