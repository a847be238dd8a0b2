import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull } from 'typeorm';
import { keysetPage } from '../../../database/keyset';
import { Scope } from '../../../shared/auth/scopes';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { ApiKey, KeyOwner } from '../domain/api-key';
import {
  ApiKeyRepository,
  KeyEvent,
  KeyEventRepository,
  KeyOnRecord,
  KeyPolicyRepository,
  ServiceAccountRepository,
} from '../domain/api-key.repository';
import { ServiceAccount } from '../domain/service-account';
import { ApiKeyEventRow, ApiKeyPolicyRow, ApiKeyRow, ServiceAccountRow } from './api-key.orm-entities';

@Injectable()
abstract class TypeOrmRepository {
  constructor(protected readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Holds a lock on `name` until the transaction ends: one create at a time per owner. */
  protected async lock(name: string): Promise<void> {
    await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [name]);
  }
}

@Injectable()
export class TypeOrmApiKeyRepository extends TypeOrmRepository implements ApiKeyRepository {
  private get rows() {
    return this.txHost.tx.getRepository(ApiKeyRow);
  }

  async insert(key: ApiKey): Promise<void> {
    await this.rows.insert(toRow(key));
  }

  async update(key: ApiKey): Promise<void> {
    const { id, organizationId, ...rest } = toRow(key);
    await this.rows.update({ id, organizationId }, rest);
  }

  async findByHash(hash: string): Promise<KeyOnRecord | null> {
    const row = await this.rows
      .createQueryBuilder('k')
      .where('k.revokedAt IS NULL')
      .andWhere('(k.hash = :hash OR (k.previousHash = :hash AND k.previousExpiresAt > now()))', { hash })
      .getOne();
    return row ? { key: toDomain(row), matched: row.hash === hash ? 'current' : 'previous' } : null;
  }

  async find(organizationId: string, id: string): Promise<ApiKey | null> {
    const row = await this.rows.findOneBy({ organizationId, id });
    return row ? toDomain(row) : null;
  }

  async listOf(organizationId: string, owner: KeyOwner, page: PageRequest): Promise<Page<ApiKey>> {
    const qb = this.rows
      .createQueryBuilder('k')
      .where('k.organizationId = :organizationId AND k.ownerType = :type AND k.ownerId = :id', { organizationId, ...owner })
      .andWhere('k.revokedAt IS NULL');
    return toPage(await keysetPage(qb, page).getMany(), page.limit, toDomain);
  }

  async countForCreate(owner: KeyOwner): Promise<number> {
    await this.lock(`api-keys:${owner.id}`);
    return this.rows.countBy({ ownerType: owner.type, ownerId: owner.id, revokedAt: IsNull() });
  }

  async revokeStale(userId: string, ownerVersion: number): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE api_keys SET revoked_at = now(), previous_hash = NULL, previous_expires_at = NULL
       WHERE owner_type = 'user' AND owner_id = $1 AND owner_version < $2 AND revoked_at IS NULL`,
      [userId, ownerVersion],
    );
  }

  async touch(id: string): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [id],
    );
  }

  async markFirstUsed(id: string): Promise<boolean> {
    const result = await this.rows.update({ id, lastUsedAt: IsNull() }, { lastUsedAt: () => 'now()' });
    return (result.affected ?? 0) === 1;
  }
}

@Injectable()
export class TypeOrmServiceAccountRepository extends TypeOrmRepository implements ServiceAccountRepository {
  private get rows() {
    return this.txHost.tx.getRepository(ServiceAccountRow);
  }

  async insert(account: ServiceAccount): Promise<void> {
    await this.rows.insert(account.toProps());
  }

  async update(account: ServiceAccount): Promise<void> {
    const { id, organizationId, ...rest } = account.toProps();
    await this.rows.update({ id, organizationId }, rest);
  }

  async find(organizationId: string, id: string): Promise<ServiceAccount | null> {
    const row = await this.rows.findOneBy({ organizationId, id });
    return row ? ServiceAccount.rehydrate(row) : null;
  }

  async findById(id: string): Promise<ServiceAccount | null> {
    const row = await this.rows.findOneBy({ id });
    return row ? ServiceAccount.rehydrate(row) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<ServiceAccount>> {
    const qb = this.rows.createQueryBuilder('s').where('s.organizationId = :organizationId', { organizationId });
    return toPage(await keysetPage(qb, page).getMany(), page.limit, (row) => ServiceAccount.rehydrate(row));
  }

  async countForCreate(organizationId: string): Promise<number> {
    await this.lock(`service-accounts:${organizationId}`);
    return this.rows.countBy({ organizationId });
  }

  /** The account and its keys. */
  async delete(organizationId: string, id: string): Promise<boolean> {
    await this.txHost.tx.query(`DELETE FROM api_keys WHERE organization_id = $1 AND owner_type = 'service_account' AND owner_id = $2`, [
      organizationId,
      id,
    ]);
    return ((await this.rows.delete({ organizationId, id })).affected ?? 0) > 0;
  }
}

@Injectable()
export class TypeOrmKeyEventRepository extends TypeOrmRepository implements KeyEventRepository {
  async add(event: KeyEvent): Promise<void> {
    await this.txHost.tx.getRepository(ApiKeyEventRow).insert(event);
  }

  async listOf(keyId: string): Promise<KeyEvent[]> {
    const rows = await this.txHost.tx.getRepository(ApiKeyEventRow).find({ where: { keyId }, order: { id: 'ASC' } });
    return rows.map(({ keyId: k, organizationId, type, actor, at }) => ({ keyId: k, organizationId, type, actor, at }));
  }
}

@Injectable()
export class TypeOrmKeyPolicyRepository extends TypeOrmRepository implements KeyPolicyRepository {
  async maxLifetimeDays(organizationId: string): Promise<number | null> {
    const row = await this.txHost.tx.getRepository(ApiKeyPolicyRow).findOneBy({ organizationId });
    return row?.maxLifetimeDays ?? null;
  }

  async setMaxLifetimeDays(organizationId: string, days: number | null): Promise<void> {
    await this.txHost.tx.getRepository(ApiKeyPolicyRow).upsert({ organizationId, maxLifetimeDays: days }, ['organizationId']);
  }
}

function toRow(key: ApiKey): ApiKeyRow {
  const { owner, ...props } = key.toProps();
  return { ...props, ownerType: owner.type, ownerId: owner.id };
}

function toDomain(row: ApiKeyRow): ApiKey {
  return ApiKey.rehydrate({
    id: row.id,
    organizationId: row.organizationId,
    owner: { type: row.ownerType, id: row.ownerId },
    name: row.name,
    scopes: row.scopes as Scope[] | null,
    displayPrefix: row.displayPrefix,
    hash: row.hash,
    previousHash: row.previousHash,
    previousExpiresAt: row.previousExpiresAt,
    ownerVersion: row.ownerVersion,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  });
}
