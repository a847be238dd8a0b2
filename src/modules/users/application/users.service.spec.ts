import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page } from '../../../shared/pagination/cursor';
import { LicensingService } from '../../licensing/application/licensing.service';
import { SeatLimits } from '../../licensing/domain/seat-quotas';
import { PasswordHasher } from '../domain/password-hasher';
import { User } from '../domain/user';
import { UserRepository } from '../domain/user.repository';
import { UsersService } from './users.service';

const transactions = inlineTransactions();

class InMemoryUserRepository extends UserRepository {
  readonly users: User[] = [];
  /** What the seat check did, in order, and whether inside a transaction. */
  readonly calls: string[] = [];

  async findById(organizationId: string, id: string) {
    return this.users.find((u) => u.organizationId === organizationId && u.id === id) ?? null;
  }
  async findByEmail(email: string) {
    return this.users.find((u) => u.email === User.normalizeEmail(email)) ?? null;
  }
  async list(organizationId: string): Promise<Page<User>> {
    return { data: this.users.filter((u) => u.organizationId === organizationId), nextCursor: null };
  }
  async insert(user: User) {
    this.calls.push('insert');
    this.users.push(user);
  }
  async update() {}
  async delete() {
    return false;
  }
  async lockSeats() {
    this.calls.push(transactions.isTransactionActive() ? 'lock in transaction' : 'lock');
  }
  async count() {
    this.calls.push('count');
    return this.users.length;
  }
  async countInOrganization(organizationId: string) {
    this.calls.push('count organization');
    return this.users.filter((u) => u.organizationId === organizationId).length;
  }
}

class PlainHasher extends PasswordHasher {
  async hash(password: string) {
    return `hashed:${password}`;
  }
  async verify(hash: string, password: string) {
    return hash === `hashed:${password}`;
  }
  async verifyDummy(): Promise<false> {
    return false;
  }
}

function setup(limits: Record<string, Partial<SeatLimits>> = {}) {
  const repository = new InMemoryUserRepository();
  const licensing = {
    seatLimits: async (organizationId: string): Promise<SeatLimits> => ({
      installation: null,
      organization: null,
      ...limits[organizationId],
    }),
  } as LicensingService;
  const service = new UsersService(repository, new PlainHasher(), licensing);
  let n = 0;
  const add = (organizationId: string, extra: { isOperator?: boolean } = {}) =>
    service.create(organizationId, { email: `u${++n}@${organizationId}.test`, password: 'x'.repeat(12), role: 'member', ...extra });
  return { service, repository, add };
}

async function codeOf(promise: Promise<unknown>): Promise<[string, string]> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(error)}`);
  return [error.code, error.message];
}

describe('UsersService seats', () => {
  it('creates users without limit when neither the license nor the organization sets one', async () => {
    const { add, repository } = setup();
    for (let i = 0; i < 5; i++) await add('org-a');
    expect(repository.users).toHaveLength(5);
    // Nothing to compare with: nothing counted.
    expect(repository.calls.filter((c) => c.startsWith('count'))).toEqual([]);
  });

  it('takes the seat lock in the transaction that inserts, before counting', async () => {
    const { add, repository } = setup({ 'org-a': { installation: 10, organization: 5 } });
    const user = await add('org-a');
    expect(user).toMatchObject({ organizationId: 'org-a', passwordHash: 'hashed:xxxxxxxxxxxx' });
    expect(repository.calls).toEqual(['lock in transaction', 'count organization', 'count', 'insert']);
  });

  it("refuses a user beyond the organization's quota, and leaves the other organizations' seats alone", async () => {
    const { add, repository } = setup({ greedy: { installation: 100, organization: 2 } });
    await add('greedy');
    await add('greedy');
    expect(await codeOf(add('greedy'))).toEqual(['SEAT_LIMIT_REACHED', 'This organization has used its 2 seats']);
    await add('other');
    expect(repository.users.map((u) => u.organizationId)).toEqual(['greedy', 'greedy', 'other']);
  });

  it("refuses a user beyond the license's seats, counted across the installation", async () => {
    const { add, repository } = setup({ 'org-a': { installation: 3 }, 'org-b': { installation: 3 } });
    await add('org-a');
    await add('org-b');
    await add('org-b');
    expect(await codeOf(add('org-a'))).toEqual(['SEAT_LIMIT_REACHED', 'The license allows 3 users and all are taken']);
    expect(repository.users).toHaveLength(3);
  });

  it('checks the quota without a license', async () => {
    const { add } = setup({ 'org-a': { installation: null, organization: 1 } });
    await add('org-a');
    expect((await codeOf(add('org-a')))[0]).toBe('SEAT_LIMIT_REACHED');
  });

  it('counts operators and disabled users: every account takes a seat', async () => {
    const { service, add, repository } = setup({ 'org-a': { installation: 2, organization: 2 } });
    await add('org-a', { isOperator: true });
    const disabled = await add('org-a');
    disabled.change({ disabled: true });
    expect(await codeOf(add('org-a'))).toEqual(['SEAT_LIMIT_REACHED', 'This organization has used its 2 seats']);
    expect(await service.seatsTaken()).toBe(2);
    expect(repository.users.filter((u) => u.isOperator || u.disabled)).toHaveLength(2);
  });
});
