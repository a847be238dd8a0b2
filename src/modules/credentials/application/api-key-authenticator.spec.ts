import { EventEmitter } from 'node:events';
import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { ThrottlerStorageService } from '@nestjs/throttler';
import { AppConfig } from '../../../config/app-config';
import { Signals } from '../../../queue/signals';
import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { Principal } from '../../../shared/auth/principal';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page } from '../../../shared/pagination/cursor';
import { User } from '../../users/domain/user';
import { InMemoryUserRepository } from '../../users/domain/user.repository.fake';
import { ApiKey, KeyOwner } from '../domain/api-key';
import { ApiKeyRepository, KeyOnRecord, ServiceAccountRepository } from '../domain/api-key.repository';
import { hashKey, newKeySecret } from '../domain/key-secret';
import { ServiceAccount } from '../domain/service-account';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { ApiKeyFailureLimiter } from './api-key-failure-limiter';
import { API_KEY_CHANGED } from './api-keys.service';
import { SERVICE_ACCOUNT_CHANGED } from './service-accounts.service';

const ORG = '00000000-0000-4000-8000-00000000000a';
const IP = '203.0.113.7';
/** Failed authentications an address may have in a window, here. */
const FAILURES_PER_IP = 3;

const transactions = inlineTransactions();

/** Signals of one process: delivered at once, as Signals does locally. */
class LocalSignals {
  private readonly emitter = new EventEmitter();
  on(topic: string, handler: (id: string) => void): void {
    this.emitter.on(topic, handler);
  }
  publish(topic: string, id: string): void {
    this.emitter.emit(topic, id);
  }
}

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
  /** Keys whose first use was marked (the keys themselves are left as the spec holds them). */
  readonly used = new Set<string>();
  async markFirstUsed(id: string) {
    if (this.used.has(id) || this.keys.get(id)?.toProps().lastUsedAt) return false;
    this.used.add(id);
    this.touched.push(id);
    return true;
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
  let signals: LocalSignals;
  let storage: ThrottlerStorageService;
  let rateLimitEnabled: boolean;
  let audit: RecordingAuditTrail;

  /** Another authenticator over the same keys: another process, with its own trust (the counters are shared). */
  const make = () => {
    const config = {
      get rateLimitEnabled() {
        return rateLimitEnabled;
      },
      loginLimits: { perIp: FAILURES_PER_IP, perEmail: 10, windowSeconds: 60 },
    } as AppConfig;
    return new ApiKeyAuthenticator(keys, accounts, users, new ApiKeyFailureLimiter(storage, config), signals as unknown as Signals, audit);
  };

  beforeEach(async () => {
    keys = new InMemoryKeys();
    accounts = new InMemoryAccounts();
    users = new InMemoryUserRepository();
    signals = new LocalSignals();
    storage = new ThrottlerStorageService();
    rateLimitEnabled = true;
    audit = new RecordingAuditTrail();
    authenticator = make();
    account = ServiceAccount.create({ organizationId: ORG, name: 'exporter', role: 'member' });
    await accounts.insert(account);
  });
  afterEach(() => storage.onApplicationShutdown());

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
    expect((await refusal(authenticator.authenticate(changed, IP))).code).toBe('UNAUTHORIZED');
    expect(keys.lookups).toBe(0);
  });

  it("acts as the service account, with its role and the key's scopes, and never as an operator", async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id }, { scopes: ['agents:read'] });
    expect(await authenticator.authenticate(secret, IP)).toEqual({
      userId: account.id,
      organizationId: ORG,
      role: 'member',
      isOperator: false,
      email: 'exporter',
      credential: { type: 'api_key', keyId: key.id, serviceAccountId: account.id, scopes: ['agents:read'] },
    });
    expect(keys.touched).toEqual([key.id]);
  });

  it("records the key's first use once, in a transaction with its lastUsedAt, as done by the key itself", async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id });
    const inTransaction: boolean[] = [];
    const record = audit.record.bind(audit);
    audit.record = (...entries) => {
      inTransaction.push(transactions.isTransactionActive());
      return record(...entries);
    };
    await authenticator.authenticate(secret, IP);
    // Another process, which has not seen the key yet: the guarded update was made already.
    await make().authenticate(secret, IP);
    expect(audit.entries).toEqual([
      {
        organizationId: ORG,
        action: 'api_key.first_used',
        target: { type: 'api_key', id: key.id, name: 'k' },
        actor: { type: 'api_key', id: key.id, name: 'k', via: 'key' },
      },
    ]);
    expect(inTransaction).toEqual([true]);
    expect(keys.touched).toEqual([key.id]);
  });

  it('reads a key again after 500 ms, so a revoke is seen within a second', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { key, secret } = await issue({ type: 'service_account', id: account.id });
      await authenticator.authenticate(secret, IP);
      await authenticator.authenticate(secret, IP);
      expect(keys.lookups).toBe(1);
      key.revoke();
      jest.advanceTimersByTime(501);
      await refusal(authenticator.authenticate(secret, IP));
      expect(keys.lookups).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it("refuses a disabled service account's key and an expired key", async () => {
    const { secret } = await issue({ type: 'service_account', id: account.id });
    account.change({ disabled: true });
    expect((await refusal(authenticator.authenticate(secret, IP))).message).toBe('The API key is not valid');
    const expired = await issue({ type: 'service_account', id: account.id }, { expiresAt: new Date(Date.now() - 1) });
    account.change({ disabled: false });
    expect((await refusal(authenticator.authenticate(expired.secret, IP))).message).toBe('The API key is not valid');
  });

  it("acts as a personal key's user with the user's role now, until the user's password changes", async () => {
    const user = User.create({ organizationId: ORG, email: 'ada@example.com', passwordHash: 'h', role: 'viewer' });
    await users.insert(user);
    const { secret } = await issue({ type: 'user', id: user.id });
    expect(await authenticator.authenticate(secret, IP)).toMatchObject({
      userId: user.id,
      role: 'viewer',
      credential: { serviceAccountId: null },
    });

    const other = make();
    user.change({ passwordHash: 'new' });
    await users.update(user);
    await refusal(other.authenticate(secret, IP));
  });

  it('accepts the rotated-out secret only within its grace', async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id });
    const fresh = key.rotate(60);
    expect(hashKey(fresh)).not.toBe(hashKey(secret));
    await expect(authenticator.authenticate(secret, IP)).resolves.toMatchObject({ userId: account.id });
    await expect(make().authenticate(fresh, IP)).resolves.toMatchObject({ userId: account.id });
    key.rotate(0);
    await refusal(make().authenticate(fresh, IP));
  });

  it('forgets a revoked key at once (its signal), so the next use reads it again and is refused', async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id });
    const other = await issue({ type: 'service_account', id: account.id });
    await authenticator.authenticate(secret, IP);
    await authenticator.authenticate(other.secret, IP);
    key.revoke();
    signals.publish(API_KEY_CHANGED, key.id);
    await refusal(authenticator.authenticate(secret, IP));
    // The other key is still trusted: not read again.
    const lookups = keys.lookups;
    await authenticator.authenticate(other.secret, IP);
    expect(keys.lookups).toBe(lookups);
  });

  it("forgets every key of a service account or user when the owner's signal comes", async () => {
    const first = await issue({ type: 'service_account', id: account.id });
    const second = await issue({ type: 'service_account', id: account.id });
    await authenticator.authenticate(first.secret, IP);
    await authenticator.authenticate(second.secret, IP);
    account.change({ disabled: true });
    signals.publish(SERVICE_ACCOUNT_CHANGED, account.id);
    await refusal(authenticator.authenticate(first.secret, IP));
    await refusal(authenticator.authenticate(second.secret, IP));
  });

  it('does not keep a read that a forget overtook: the change may have committed after it', async () => {
    const { key, secret } = await issue({ type: 'service_account', id: account.id });
    const findByHash = keys.findByHash.bind(keys);
    let release = () => {};
    jest.spyOn(keys, 'findByHash').mockImplementationOnce(async (hash) => {
      const found = await findByHash(hash);
      await new Promise<void>((resolve) => (release = resolve));
      return found;
    });
    const inFlight = authenticator.authenticate(secret, IP);
    await new Promise((resolve) => setImmediate(resolve));
    key.revoke();
    authenticator.forget(key.id);
    release();
    // The read that began before the revoke answers as it found the key, and is not trusted after.
    await expect(inFlight).resolves.toMatchObject({ userId: account.id });
    await refusal(authenticator.authenticate(secret, IP));
  });

  it('answers 429 with Retry-After past the failures an address may have, without reading another key', async () => {
    const { secret } = await issue({ type: 'service_account', id: account.id });
    await authenticator.authenticate(secret, IP);
    for (let i = 0; i < FAILURES_PER_IP; i++)
      expect((await refusal(authenticator.authenticate(unknownKey(i), IP))).code).toBe('UNAUTHORIZED');
    const over = await refusal(authenticator.authenticate(unknownKey(99), IP));
    expect(over.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(over.headers?.['Retry-After'])).toBeGreaterThan(0);

    const lookups = keys.lookups;
    expect((await refusal(authenticator.authenticate(unknownKey(100), IP))).code).toBe('RATE_LIMIT_EXCEEDED');
    // A valid key this process trusts at the moment still passes; one it must read waits like the rest.
    await expect(authenticator.authenticate(secret, IP)).resolves.toMatchObject({ userId: account.id });
    const unread = await issue({ type: 'service_account', id: account.id });
    expect((await refusal(authenticator.authenticate(unread.secret, IP))).code).toBe('RATE_LIMIT_EXCEEDED');
    expect(keys.lookups).toBe(lookups);
    // Another address is not held back, nor is the same one in another process until its own first failure.
    await expect(authenticator.authenticate(unread.secret, '198.51.100.9')).resolves.toMatchObject({ userId: account.id });
    expect((await refusal(make().authenticate(unknownKey(101), IP))).code).toBe('RATE_LIMIT_EXCEEDED');
  });

  it('counts nothing with rate limiting off', async () => {
    rateLimitEnabled = false;
    for (let i = 0; i < FAILURES_PER_IP * 3; i++)
      expect((await refusal(authenticator.authenticate(unknownKey(i), IP))).code).toBe('UNAUTHORIZED');
  });
});

/** A well-formed key (valid checksum) that nobody issued. */
function unknownKey(n: number): string {
  return newKeySecret(n % 2 ? 'personal' : 'service_account').key;
}
