import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { Signals } from '../../../queue/signals';
import { AuditAction, AuditChanges, AuditTrail, changedFields } from '../../../shared/audit/audit-trail';
import { Principal } from '../../../shared/auth/principal';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { UserRepository } from '../../users/domain/user.repository';
import { ApiKey, expiryOf, KeyOwner } from '../domain/api-key';
import {
  ApiKeyRepository,
  KeyEvent,
  KeyEventRepository,
  KeyPolicyRepository,
  ServiceAccountRepository,
} from '../domain/api-key.repository';

/** Unrevoked keys one user or service account may hold. */
export const KEYS_PER_OWNER = 20;
export const NO_EXPIRY_FEATURE = 'api-keys.no-expiry';
/** Signal topic: a key was revoked or rotated (authenticators forget what they trusted of it). */
export const API_KEY_CHANGED = 'api-key.changed';

export interface KeyRequest {
  name: string;
  scopes?: Scope[];
  /** Omitted: the default lifetime; null: never (enterprise only). */
  expiresAt?: Date | null;
}

/** A key with its secret: the answer of a create or a rotate, the only ones that show it. */
export interface IssuedKey {
  key: ApiKey;
  secret: string;
}

/** Whose keys a request is about: a service account of the caller's organization, or the caller. */
export type KeyHolder = { type: 'service_account'; id: string } | { type: 'me' };

/**
 * API keys of service accounts and of people: create (shown once), list, revoke, rotate with
 * a grace window, the audit trail, and the organization's lifetime cap.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly accounts: ServiceAccountRepository,
    private readonly events: KeyEventRepository,
    private readonly policy: KeyPolicyRepository,
    private readonly users: UserRepository,
    private readonly subscription: SubscriptionService,
    private readonly signals: Signals,
    private readonly audit: AuditTrail,
  ) {}

  @Transactional()
  async create(caller: Principal, holder: KeyHolder, request: KeyRequest): Promise<IssuedKey> {
    const { owner, ownerVersion } = await this.owner(caller, holder);
    if (owner.type === 'user') await this.keys.revokeStale(owner.id, ownerVersion);
    if ((await this.keys.countForCreate(owner)) >= KEYS_PER_OWNER) {
      throw new DomainError('API_KEY_LIMIT_REACHED', `At most ${KEYS_PER_OWNER} API keys per holder; revoke one first`);
    }
    if (request.expiresAt === null) await this.subscription.assertFeature(caller.organizationId, NO_EXPIRY_FEATURE);
    const expiresAt = expiryOf(request.expiresAt, await this.policy.maxLifetimeDays(caller.organizationId));
    const issued = ApiKey.issue({
      organizationId: caller.organizationId,
      owner,
      name: request.name,
      scopes: request.scopes ?? null,
      expiresAt,
      ownerVersion,
    });
    await this.keys.insert(issued.key);
    await this.record(caller, issued.key, 'created');
    await this.audit.record({ ...audited(issued.key, 'api_key.created'), changes: { after: described(issued.key) } });
    return { key: issued.key, secret: issued.secret };
  }

  async list(caller: Principal, holder: KeyHolder, page: PageRequest): Promise<Page<ApiKey>> {
    const { owner } = await this.owner(caller, holder);
    return this.keys.listOf(caller.organizationId, owner, page);
  }

  /** In force in this process for its next request: the key is forgotten once the revoke is committed. */
  async revoke(caller: Principal, holder: KeyHolder, keyId: string): Promise<void> {
    await this.revokeStored(caller, holder, keyId);
    this.signals.publish(API_KEY_CHANGED, keyId);
  }

  /** Without grace the old secret stops at once in this process, as a revoke does. */
  async rotate(caller: Principal, holder: KeyHolder, keyId: string, graceSeconds: number): Promise<IssuedKey> {
    const issued = await this.rotateStored(caller, holder, keyId, graceSeconds);
    this.signals.publish(API_KEY_CHANGED, keyId);
    return issued;
  }

  /** Admins read every key's trail; others only their own personal keys' (others' are not found). */
  async trail(caller: Principal, keyId: string): Promise<KeyEvent[]> {
    const key = await this.keys.find(caller.organizationId, keyId);
    const mine = key?.owner.type === 'user' && key.owner.id === caller.userId;
    if (!key || (caller.role !== 'admin' && !mine)) throw new DomainError('API_KEY_NOT_FOUND', 'API key not found');
    return this.events.listOf(key.id);
  }

  maxLifetimeDays(organizationId: string): Promise<number | null> {
    return this.policy.maxLifetimeDays(organizationId);
  }

  @Transactional()
  async setMaxLifetimeDays(organizationId: string, days: number | null): Promise<number | null> {
    const before = await this.policy.maxLifetimeDays(organizationId);
    await this.policy.setMaxLifetimeDays(organizationId, days);
    await this.audit.record({
      organizationId,
      action: 'api_key.policy_updated',
      target: { type: 'api_key_policy', id: organizationId, name: null },
      changes: changedFields({ maxLifetimeDays: before }, { maxLifetimeDays: days }),
    });
    return days;
  }

  @Transactional()
  private async revokeStored(caller: Principal, holder: KeyHolder, keyId: string): Promise<void> {
    const key = await this.require(caller, holder, keyId);
    key.revoke();
    await this.keys.update(key);
    await this.record(caller, key, 'revoked');
    await this.audit.record({ ...audited(key, 'api_key.revoked'), changes: { after: { revokedAt: key.toProps().revokedAt } } });
  }

  @Transactional()
  private async rotateStored(caller: Principal, holder: KeyHolder, keyId: string, graceSeconds: number): Promise<IssuedKey> {
    const key = await this.require(caller, holder, keyId);
    const secret = key.rotate(graceSeconds);
    await this.keys.update(key);
    await this.record(caller, key, 'rotated');
    // When the secret rotated out stops working; never a secret nor a hash.
    const rotated: AuditChanges = { after: { graceSeconds, previousValidUntil: key.toProps().previousExpiresAt } };
    await this.audit.record({ ...audited(key, 'api_key.rotated'), changes: rotated });
    return { key, secret };
  }

  private async require(caller: Principal, holder: KeyHolder, keyId: string): Promise<ApiKey> {
    const { owner } = await this.owner(caller, holder);
    const key = await this.keys.find(caller.organizationId, keyId);
    if (!key || key.revoked || key.owner.type !== owner.type || key.owner.id !== owner.id) {
      throw new DomainError('API_KEY_NOT_FOUND', 'API key not found');
    }
    return key;
  }

  private async owner(caller: Principal, holder: KeyHolder): Promise<{ owner: KeyOwner; ownerVersion: number }> {
    if (holder.type === 'service_account') {
      const account = await this.accounts.find(caller.organizationId, holder.id);
      if (!account) throw new DomainError('SERVICE_ACCOUNT_NOT_FOUND', 'Service account not found');
      return { owner: { type: 'service_account', id: account.id }, ownerVersion: 0 };
    }
    const user = await this.users.findById(caller.organizationId, caller.userId);
    if (!user) throw new DomainError('USER_NOT_FOUND', 'User not found');
    return { owner: { type: 'user', id: user.id }, ownerVersion: user.keysVersion };
  }

  private record(caller: Principal, key: ApiKey, type: KeyEvent['type']): Promise<void> {
    return this.events.add({
      keyId: key.id,
      organizationId: key.organizationId,
      type,
      actor: { type: 'user', id: caller.userId },
      at: new Date(),
    });
  }
}

function audited(key: ApiKey, action: Extract<AuditAction, `api_key.${string}`>) {
  return { organizationId: key.organizationId, action, target: { type: 'api_key', id: key.id, name: key.toProps().name } };
}

/** A key as the audit log shows it: whose it is, what it may do, until when; never its secret, hash or prefix. */
function described(key: ApiKey) {
  const { name, owner, scopes, expiresAt } = key.toProps();
  return { name, owner, scopes, expiresAt };
}
