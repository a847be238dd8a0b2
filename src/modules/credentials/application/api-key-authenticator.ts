import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { Signals } from '../../../queue/signals';
import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { USER_CHANGED } from '../../users/application/users.service';
import { UserRepository } from '../../users/domain/user.repository';
import { ApiKey } from '../domain/api-key';
import { ApiKeyRepository, ServiceAccountRepository } from '../domain/api-key.repository';
import { hashKey, parseKey } from '../domain/key-secret';
import { ApiKeyFailureLimiter } from './api-key-failure-limiter';
import { API_KEY_CHANGED } from './api-keys.service';
import { SERVICE_ACCOUNT_CHANGED } from './service-accounts.service';

/**
 * How long a key found valid is trusted without reading it again. A revoke, an expiry or a
 * disabled owner is refused on every instance within this, well inside the promised second;
 * in the process that made the change at once (see `forget`).
 */
const TRUST_MS = 500;
const MAX_TRUSTED = 10_000;
const LAST_USED_EVERY_MS = 60_000;

interface Trusted {
  principal: Principal;
  key: ApiKey;
  until: number;
}

/**
 * From a bearer token that is an API key to the principal it acts as, or 401; failures counted
 * per client address (429 past the limit, see ApiKeyFailureLimiter). A key revoked or rotated,
 * a service account changed or deleted, a user changed or deleted is forgotten when its signal
 * comes: at once in the process that made the change (after its commit), and in the others
 * as soon as the signal reaches them (within TRUST_MS in any case).
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly logger = new Logger('ApiKeys');
  private readonly trusted = new Map<string, Trusted>();
  /** Raised by every `forget`: a read that began before one is not kept (it may predate the change). */
  private epoch = 0;

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly accounts: ServiceAccountRepository,
    private readonly users: UserRepository,
    private readonly limiter: ApiKeyFailureLimiter,
    signals: Signals,
    private readonly audit: AuditTrail,
  ) {
    signals.on(API_KEY_CHANGED, (keyId) => this.forget(keyId));
    signals.on(SERVICE_ACCOUNT_CHANGED, (accountId) => this.forgetOwner(accountId));
    signals.on(USER_CHANGED, (userId) => this.forgetOwner(userId));
  }

  /** `clientIp`: the caller's address, which failures are counted by. */
  async authenticate(token: string, clientIp: string): Promise<Principal> {
    try {
      return await this.principalFor(token, clientIp);
    } catch (error) {
      // A refused key counts against the address; past the limit the answer is the 429.
      if (error instanceof DomainError && error.code === 'UNAUTHORIZED') await this.limiter.failed(clientIp);
      throw error;
    }
  }

  /** The key is read again on its next use (it was revoked or rotated). */
  forget(keyId: string): void {
    this.epoch++;
    for (const [hash, trusted] of this.trusted) if (trusted.key.id === keyId) this.trusted.delete(hash);
  }

  /** Every key of this service account or user is read again on its next use. */
  forgetOwner(ownerId: string): void {
    this.epoch++;
    for (const [hash, trusted] of this.trusted) if (trusted.key.owner.id === ownerId) this.trusted.delete(hash);
  }

  private async principalFor(token: string, clientIp: string): Promise<Principal> {
    // A wrong checksum is refused before anything is read.
    if (!parseKey(token)) throw notValid();
    const hash = hashKey(token);
    const now = Date.now();
    let trusted = this.trusted.get(hash);
    if (!trusted || trusted.until < now) {
      this.trusted.delete(hash);
      // An address past its failure limit is refused before the read.
      this.limiter.assertAllowed(clientIp);
      const epoch = this.epoch;
      trusted = await this.lookUp(hash, now);
      if (epoch === this.epoch) {
        if (this.trusted.size >= MAX_TRUSTED) this.trusted.clear();
        this.trusted.set(hash, trusted);
      }
    }
    const { expiresAt } = trusted.key.toProps();
    // The same answer as for an unknown key: a refusal says nothing of which keys exist.
    if (expiresAt && expiresAt.getTime() <= now) throw notValid();
    return trusted.principal;
  }

  private async lookUp(hash: string, now: number): Promise<Trusted> {
    const found = await this.keys.findByHash(hash);
    if (!found) throw notValid();
    const { key } = found;
    const props = key.toProps();
    const principal = await this.principalOf(key);
    if (!principal) throw notValid();
    if (!props.lastUsedAt) {
      // Awaited: the first use is in the audit log by the time the request is answered.
      await this.firstUse(key).catch((error: Error) => this.logger.warn(`first use of ${key.id} not recorded: ${error.message}`));
    } else if (now - props.lastUsedAt.getTime() >= LAST_USED_EVERY_MS) {
      this.keys.touch(key.id).catch((error: Error) => this.logger.warn(`lastUsedAt of ${key.id} not updated: ${error.message}`));
    }
    return { principal, key, until: now + TRUST_MS };
  }

  /**
   * lastUsedAt set and 'api_key.first_used' recorded in one transaction, by the call whose
   * guarded update set it: once per key, whichever request or instance comes first, and never
   * one without the other. The actor is the key itself.
   */
  @Transactional()
  private async firstUse(key: ApiKey): Promise<void> {
    if (!(await this.keys.markFirstUsed(key.id))) return;
    const { id, organizationId, name } = key.toProps();
    await this.audit.record({
      organizationId,
      action: 'api_key.first_used',
      target: { type: 'api_key', id, name },
      actor: { type: 'api_key', id, name, via: 'key' },
    });
  }

  /** The principal the key acts as: its owner now (role, status), narrowed by the key's scopes; null when the owner may not. */
  private async principalOf(key: ApiKey): Promise<Principal | null> {
    const { id, organizationId, owner, scopes, ownerVersion } = key.toProps();
    if (owner.type === 'service_account') {
      const account = await this.accounts.findById(owner.id);
      if (!account || account.disabled || account.organizationId !== organizationId) return null;
      return {
        userId: account.id,
        organizationId,
        role: account.role,
        isOperator: false,
        email: account.name,
        credential: { type: 'api_key', keyId: id, serviceAccountId: account.id, scopes },
      };
    }
    const user = await this.users.findById(organizationId, owner.id);
    if (!user?.canSignIn || user.keysVersion !== ownerVersion) return null;
    return {
      userId: user.id,
      organizationId,
      role: user.role,
      isOperator: false,
      email: user.email,
      credential: { type: 'api_key', keyId: id, serviceAccountId: null, scopes },
    };
  }
}

function notValid(): DomainError {
  return new DomainError('UNAUTHORIZED', 'The API key is not valid');
}
