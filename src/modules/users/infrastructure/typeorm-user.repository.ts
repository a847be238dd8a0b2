import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../../database/keyset';
import { isUniqueViolation } from '../../../shared/errors/postgres-errors';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest, toPage } from '../../../shared/pagination/cursor';
import { User } from '../domain/user';
import { UserRepository } from '../domain/user.repository';
import { UserRow } from './user.orm-entity';

/** Arbitrary but fixed (every process of the installation must use the same): serializes user creation. */
const SEAT_LOCK_KEY = 728_394_002;

@Injectable()
export class TypeOrmUserRepository extends UserRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

  private get rows() {
    return this.txHost.tx.getRepository(UserRow);
  }

  async findById(organizationId: string, id: string): Promise<User | null> {
    const row = await this.rows.findOneBy({ organizationId, id });
    return row ? User.rehydrate(row) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const row = await this.rows.findOneBy({ email: User.normalizeEmail(email) });
    return row ? User.rehydrate(row) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<User>> {
    const qb = this.rows.createQueryBuilder('u').where('u.organizationId = :organizationId', { organizationId });
    const rows = await keysetPage(qb, page).getMany();
    return toPage(rows, page.limit, (row) => User.rehydrate(row));
  }

  async insert(user: User): Promise<void> {
    try {
      await this.rows.insert(user.toProps());
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key'))
        // Emails are unique across the installation (sign-in is by email alone); the answer says
        // no more than that, and nothing of the organization that holds it.
        throw new DomainError('EMAIL_TAKEN', 'This email cannot be used for a new user; choose another');
      throw error;
    }
  }

  async update(user: User): Promise<void> {
    const { id, organizationId, ...rest } = user.toProps();
    await this.rows.update({ id, organizationId }, rest);
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const result = await this.rows.delete({ organizationId, id });
    return (result.affected ?? 0) > 0;
  }

  async lockSeats(): Promise<void> {
    await this.txHost.tx.query('SELECT pg_advisory_xact_lock($1)', [SEAT_LOCK_KEY]);
  }

  count(): Promise<number> {
    return this.rows.count();
  }

  countInOrganization(organizationId: string): Promise<number> {
    return this.rows.countBy({ organizationId });
  }
}
