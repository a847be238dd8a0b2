import { Principal } from '../../../shared/auth/principal';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page } from '../../../shared/pagination/cursor';
import { InMemoryUserRepository } from '../../auth/application/in-memory-ports.fake';
import { User } from '../../users/domain/user';
import { ApiKey, KeyOwner } from '../domain/api-key';
import { ApiKeyRepository, KeyOnRecord, ServiceAccountRepository } from '../domain/api-key.repository';
import { hashKey } from '../domain/key-secret';
import { ServiceAccount } from '../domain/service-account';
import { ApiKeyAuthenticator } from './api-key-authenticator';

const ORG = '00000000-0000-4000-8000-00000000000a';

/** Keys in memory, counting the lookups a request makes. */
class InMemoryKeys extends ApiKeyRepository {
  readonly keys = new Map<string, ApiKey>();
  lookups = 0;
  touched: string[] = [];

  async insert(key: ApiKey) {
    this.keys.set(key.id, key);
  }
  async update(key: ApiKey) {
    this.keys.set(key.id, key);
  }
  async findByHash(hash: string): Promise<KeyOnRecord | null> {
    this.lookups++;
    for (const key of this.keys.values()) {
      const p = key.toProps();
      if (p.revokedAt) continue;
      if (p.hash === hash) return { key, matched: 'current' };
      if (p.previousHash === hash && p.previousExpiresAt! > new Date()) return { key, matched: 'previous' };
    }
    return null;
  }
  async find(organizationId: string, id: string) {
    const key = this.keys.get(id);
    return key?.organizationId === organizationId ? key : null;
  }
  async listOf(): Promise<Page<ApiKey>> {
    return { data: [...this.keys.values()], nextCursor: null };
  }
  async countForCreate(owner: KeyOwner) {
    return [...this.keys.values()].filter((k) => k.owner.id === owner.id && !k.revoked).length;
  }
  async revokeStale() {}
  async touch(id: string) {
    this.touched.push(id);
  }
}

class InMemoryAccounts extends ServiceAccountRepository {
  readonly accounts = new Map<string, ServiceAccount>();
  async insert(account: ServiceAccount) {
    this.accounts.set(account.id, account);
  }
  async update(account: ServiceAccount) {
    this.accounts.set(account.id, account);
  }
  async find(organizationId: string, id: string) {
    const account = this.accounts.get(id);
    return account?.organizationId === organizationId ? account : null;
  }
  async findById(id: string) {
    return this.accounts.get(id) ?? null;
  }
  async list(): Promise<Page<ServiceAccount>> {
    return { data: [...this.accounts.values()], nextCursor: null };
  }
  async countForCreate() {
    return this.accounts.size;
  }
  async delete(_organizationId: string, id: string) {
    return this.accounts.delete(id);
  }
}

async function refusal(work: Promise<Principal>): Promise<DomainError> {
  const error = await work.then(
    () => new Error('expected a refusal'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('ApiKeyAuthenticator', () => {
  let keys: InMemoryKeys;
  let accounts: InMemoryAccounts;
  let users: InMemoryUserRepository;
  let authenticator: ApiKeyAuthenticator;
  let account: ServiceAccount;

  beforeEach(async () => {
    keys = new InMemoryKeys();
    accounts = new InMemoryAccounts();
    users = new InMemoryUserRepository();
    authenticator = new ApiKeyAuthenticator(keys, accounts, users);
    account = ServiceAccount.create({ organizationId: ORG, name: 'exporter', role: 'member' });
    await accounts.insert(account);
  });

  async function issue(owner: KeyOwner, more: { scopes?: Scope[]; expiresAt?: Date | null; ownerVersion?: number } = {}) {
    const issued = ApiKey.issue({
      organizationId: ORG,
      owner,
      name: 'k',
      scopes: more.scopes ?? null,
      expiresAt: more.expiresAt === undefined ? new Date(Date.now() + 60_000) : more.expiresAt,
      ownerVersion: more.ownerVersion ?? 0,
    });
    await keys.insert(issued.key);
    return issued;
  }

  it('refuses a key with a wrong checksum without looking it up', async () => {
    const { secret } = await issue({ type: 'service_account', id: account.id });
    const changed = secret.slice(0, 20) + (secret[20] === 'a' ? 'b' : 'a') + secret.slice(21);
    expect((await refusal(authenticator.authenticate(changed))).code).toBe('UNAUTHORIZED');
    expect(keys.lookups).toBe(0);
  });

  it("acts as the service account, with its role and the key's scopes, and never as an operator", async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id }, { scopes: ['agents:read'] });
    expect(await authenticator.authenticate(secret)).toEqual({
      userId: account.id,
      organizationId: ORG,
      role: 'member',
      isOperator: false,
      email: 'exporter',
      credential: { type: 'api_key', keyId: key.id, serviceAccountId: account.id, scopes: ['agents:read'] },
    });
    expect(keys.touched).toEqual([key.id]);
  });

  it('reads a key again after 500 ms, so a revoke is seen within a second', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { key, secret } = await issue({ type: 'service_account', id: account.id });
      await authenticator.authenticate(secret);
      await authenticator.authenticate(secret);
      expect(keys.lookups).toBe(1);
      key.revoke();
      jest.advanceTimersByTime(501);
      await refusal(authenticator.authenticate(secret));
      expect(keys.lookups).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it("refuses a disabled service account's key and an expired key", async () => {
    const { secret } = await issue({ type: 'service_account', id: account.id });
    account.change({ disabled: true });
    expect((await refusal(authenticator.authenticate(secret))).message).toBe('The API key is not valid');
    const expired = await issue({ type: 'service_account', id: account.id }, { expiresAt: new Date(Date.now() - 1) });
    account.change({ disabled: false });
    expect((await refusal(authenticator.authenticate(expired.secret))).message).toBe('The API key is not valid');
  });

  it("acts as a personal key's user with the user's role now, until the user's password changes", async () => {
    const user = User.create({ organizationId: ORG, email: 'ada@example.com', passwordHash: 'h', role: 'viewer' });
    await users.insert(user);
    const { secret } = await issue({ type: 'user', id: user.id });
    expect(await authenticator.authenticate(secret)).toMatchObject({
      userId: user.id,
      role: 'viewer',
      credential: { serviceAccountId: null },
    });

    const other = new ApiKeyAuthenticator(keys, accounts, users);
    user.change({ passwordHash: 'new' });
    await users.update(user);
    await refusal(other.authenticate(secret));
  });

  it('accepts the rotated-out secret only within its grace', async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id });
    const fresh = key.rotate(60);
    expect(hashKey(fresh)).not.toBe(hashKey(secret));
    await expect(authenticator.authenticate(secret)).resolves.toMatchObject({ userId: account.id });
    await expect(new ApiKeyAuthenticator(keys, accounts, users).authenticate(fresh)).resolves.toMatchObject({ userId: account.id });
    key.rotate(0);
    await refusal(new ApiKeyAuthenticator(keys, accounts, users).authenticate(fresh));
  });
});
