import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../../database/keyset';
import { isUniqueViolation } from '../../../shared/errors/postgres-errors';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { Organization } from '../domain/organization';
import { OrganizationRepository } from '../domain/organization.repository';
import { OrganizationRow } from './organization.orm-entity';

@Injectable()
export class TypeOrmOrganizationRepository extends OrganizationRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(OrganizationRow);
  }

  async findById(id: string): Promise<Organization | null> {
    const row = await this.rows.findOneBy({ id });
    return row ? Organization.rehydrate(row) : null;
  }

  async findBySlug(slug: string): Promise<Organization | null> {
    const row = await this.rows.findOneBy({ slug });
    return row ? Organization.rehydrate(row) : null;
  }

  async list(page: PageRequest): Promise<Page<Organization>> {
    const rows = await keysetPage(this.rows.createQueryBuilder('o'), page).getMany();
    return toPage(rows, page.limit, (row) => Organization.rehydrate(row));
  }

  async insert(organization: Organization): Promise<void> {
    try {
      await this.rows.insert(organization.toProps());
    } catch (error) {
      if (isUniqueViolation(error, 'organizations_slug_key')) {
        throw new DomainError('ORGANIZATION_SLUG_TAKEN', `An organization with slug '${organization.slug}' already exists`);
      }
      throw error;
    }
  }

  async update(organization: Organization): Promise<void> {
    const { id, name, tier, rateLimitPerMinute, seatQuota, historyRetentionDays } = organization.toProps();
    await this.rows.update({ id }, { name, tier, rateLimitPerMinute, seatQuota, historyRetentionDays });
  }

  count(): Promise<number> {
    return this.rows.count();
  }

  async exists(): Promise<boolean> {
    return (await this.rows.count({ take: 1 })) > 0;
  }
}
