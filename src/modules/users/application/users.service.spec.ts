import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { Signals } from '../../../queue/signals';
import { DomainError } from '../../../shared/errors/domain-error';
import { LicensingService } from '../../licensing/application/licensing.service';
import { SeatLimits } from '../../licensing/domain/seat-quotas';
import { FakePasswordHasher } from '../domain/password-hasher.fake';
import { InMemoryUserRepository } from '../domain/user.repository.fake';
import { UsersService } from './users.service';

const transactions = inlineTransactions();

function setup(limits: Record<string, Partial<SeatLimits>> = {}, hasher = new FakePasswordHasher()) {
  const repository = new InMemoryUserRepository({ inTransaction: () => transactions.isTransactionActive() });
  const licensing = {
    seatLimits: async (organizationId: string): Promise<SeatLimits> => ({
      installation: null,
      organization: null,
      ...limits[organizationId],
    }),
  } as LicensingService;
  const signals = { publish: () => undefined } as unknown as Signals;
  const service = new UsersService(repository, hasher, licensing, signals);
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
    expect(repository.all()).toHaveLength(5);
    // Nothing to compare with: nothing counted.
    expect(repository.calls.filter((c) => c.startsWith('count'))).toEqual([]);
  });

  it('takes the seat lock in the transaction that inserts, before counting', async () => {
    const { add, repository } = setup({ 'org-a': { installation: 10, organization: 5 } });
    const user = await add('org-a');
    expect(user).toMatchObject({ organizationId: 'org-a', passwordHash: 'hashed:xxxxxxxxxxxx' });
    expect(repository.calls).toEqual(['lock in transaction', 'count organization', 'count', 'insert']);
  });

  it('hashes the password before the transaction: the seat lock, which every creation waits for, is not held for a hash', async () => {
    const hashedWhile: string[] = [];
    const hasher = new FakePasswordHasher();
    const hash = hasher.hash.bind(hasher);
    hasher.hash = (password) => {
      hashedWhile.push(transactions.isTransactionActive() ? 'in transaction' : 'outside');
      return hash(password);
    };
    const { add, repository } = setup({}, hasher);
    await add('org-a');
    expect(hashedWhile).toEqual(['outside']);
    expect(repository.calls).toEqual(['lock in transaction', 'insert']);
  });

  it("refuses a user beyond the organization's quota, and leaves the other organizations' seats alone", async () => {
    const { add, repository } = setup({ greedy: { installation: 100, organization: 2 } });
    await add('greedy');
    await add('greedy');
    expect(await codeOf(add('greedy'))).toEqual(['SEAT_LIMIT_REACHED', 'This organization has used its 2 seats']);
    await add('other');
    expect(repository.all().map((u) => u.organizationId)).toEqual(['greedy', 'greedy', 'other']);
  });

  it("refuses a user beyond the license's seats, counted across the installation", async () => {
    const { add, repository } = setup({ 'org-a': { installation: 3 }, 'org-b': { installation: 3 } });
    await add('org-a');
    await add('org-b');
    await add('org-b');
    expect(await codeOf(add('org-a'))).toEqual(['SEAT_LIMIT_REACHED', 'The license allows 3 users and all are taken']);
    expect(repository.all()).toHaveLength(3);
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
    await repository.update(disabled);
    expect(await codeOf(add('org-a'))).toEqual(['SEAT_LIMIT_REACHED', 'This organization has used its 2 seats']);
    expect(await service.seatsTaken()).toBe(2);
    expect(repository.all().filter((u) => u.isOperator || u.disabled)).toHaveLength(2);
  });
});
