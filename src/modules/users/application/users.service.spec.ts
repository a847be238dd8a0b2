import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { Signals } from '../../../queue/signals';
import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { Principal } from '../../../shared/auth/principal';
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
  const audit = new RecordingAuditTrail();
  const service = new UsersService(repository, hasher, licensing, signals, audit);
  let n = 0;
  const add = (organizationId: string, extra: { isOperator?: boolean } = {}) =>
    service.create(organizationId, { email: `u${++n}@${organizationId}.test`, password: 'x'.repeat(12), role: 'member', ...extra });
  return { service, repository, add, audit };
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

describe('UsersService audit', () => {
  const admin = (organizationId: string, userId: string): Principal => ({
    userId,
    organizationId,
    role: 'admin',
    isOperator: false,
    email: 'admin@org.test',
    credential: { type: 'session' },
  });

  it('records a creation, a change (only what changed; a password by name, never its hash) and a deletion', async () => {
    const { service, add, audit } = setup();
    const boss = await add('org-a');
    const user = await add('org-a');
    const target = { type: 'user', id: user.id, name: user.email };
    expect(audit.entries[1]).toEqual({
      organizationId: 'org-a',
      action: 'user.created',
      target,
      changes: {
        after: { email: user.email, firstName: null, lastName: null, role: 'member', disabled: false, isOperator: false },
      },
    });

    audit.entries.length = 0;
    await service.update(admin('org-a', boss.id), user.id, { role: 'viewer', disabled: true, password: 'y'.repeat(12) });
    expect(audit.entries).toEqual([
      {
        organizationId: 'org-a',
        action: 'user.updated',
        target,
        changes: { before: { role: 'member', disabled: false }, after: { role: 'viewer', disabled: true, password: '[redacted]' } },
      },
    ]);

    audit.entries.length = 0;
    await service.changeOwnPassword(admin('org-a', user.id), 'y'.repeat(12), 'z'.repeat(12));
    await service.resetPassword(user.email, 'w'.repeat(12));
    expect(audit.entries.map((e) => [e.action, e.changes])).toEqual([
      ['user.updated', { after: { password: '[redacted]' } }],
      ['user.updated', { after: { password: '[redacted]' } }],
    ]);
    expect(JSON.stringify(audit.entries)).not.toContain('hashed:');

    audit.entries.length = 0;
    await service.delete(admin('org-a', boss.id), user.id);
    expect(audit.entries).toEqual([
      {
        organizationId: 'org-a',
        action: 'user.deleted',
        target,
        changes: { before: expect.objectContaining({ role: 'viewer', disabled: true }) },
      },
    ]);
  });

  it('records nothing for a refused change or deletion', async () => {
    const { service, add, audit } = setup();
    const boss = await add('org-a');
    audit.entries.length = 0;
    expect((await codeOf(service.update(admin('org-a', boss.id), boss.id, { disabled: true })))[0]).toBe('FORBIDDEN');
    expect((await codeOf(service.delete(admin('org-a', boss.id), boss.id)))[0]).toBe('FORBIDDEN');
    expect(audit.entries).toEqual([]);
  });
});
