import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, Not } from 'typeorm';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { RefreshTokenRow } from './refresh-token.orm-entity';

@Injectable()
export class TypeOrmRefreshTokenRepository extends RefreshTokenRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(RefreshTokenRow);
  }

  async findByHash(tokenHash: string): Promise<RefreshToken | null> {
    const row = await this.rows.findOneBy({ tokenHash });
    return row ? RefreshToken.rehydrate(row) : null;
  }

  async insert(token: RefreshToken): Promise<void> {
    await this.rows.insert({ ...token.props });
  }

  async markUsed(id: string): Promise<boolean> {
    const result = await this.rows.update({ id, usedAt: IsNull(), revokedAt: IsNull() }, { usedAt: new Date() });
    return (result.affected ?? 0) === 1;
  }

  async moveToVersion(userId: string, version: number, exceptFamily?: string): Promise<void> {
    await this.rows.update(
      { userId, revokedAt: IsNull(), usedAt: IsNull(), ...(exceptFamily ? { familyId: Not(exceptFamily) } : {}) },
      { credentialsVersion: version },
    );
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.rows.update({ familyId, revokedAt: IsNull() }, { revokedAt: new Date() });
  }
}
