import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { ApiKey, KeyOwner } from './api-key';
import { ServiceAccount } from './service-account';

/** What authenticating a key needs of its row. */
export interface KeyOnRecord {
  key: ApiKey;
  /** Whether the hash matched the current secret or the one rotated out (still in its grace window). */
  matched: 'current' | 'previous';
}

export abstract class ApiKeyRepository {
  abstract insert(key: ApiKey): Promise<void>;
  abstract update(key: ApiKey): Promise<void>;
  /** The unrevoked key whose current secret, or previous one still within its grace, hashes to `hash`. */
  abstract findByHash(hash: string): Promise<KeyOnRecord | null>;
  abstract find(organizationId: string, id: string): Promise<ApiKey | null>;
  abstract listOf(organizationId: string, owner: KeyOwner, page: PageRequest): Promise<Page<ApiKey>>;
  /** Unrevoked keys of the owner, counted under a lock held until the transaction ends. */
  abstract countForCreate(owner: KeyOwner): Promise<number>;
  /** Revokes a personal key owner's keys issued under an older keys version (after a password change). */
  abstract revokeStale(userId: string, ownerVersion: number): Promise<void>;
  /** Sets lastUsedAt unless it was set less than a minute ago. */
  abstract touch(id: string): Promise<void>;
  /** Sets lastUsedAt of a key never used; true when this call did (its first use, whichever instance saw it first). */
  abstract markFirstUsed(id: string): Promise<boolean>;
}

export abstract class ServiceAccountRepository {
  abstract insert(account: ServiceAccount): Promise<void>;
  abstract update(account: ServiceAccount): Promise<void>;
  abstract find(organizationId: string, id: string): Promise<ServiceAccount | null>;
  abstract findById(id: string): Promise<ServiceAccount | null>;
  abstract list(organizationId: string, page: PageRequest): Promise<Page<ServiceAccount>>;
  /** The organization's service accounts, counted under a lock held until the transaction ends. */
  abstract countForCreate(organizationId: string): Promise<number>;
  abstract delete(organizationId: string, id: string): Promise<boolean>;
}

export type KeyEventType = 'created' | 'rotated' | 'revoked';

export interface KeyEvent {
  keyId: string;
  organizationId: string;
  type: KeyEventType;
  actor: { type: 'user' | 'api_key'; id: string };
  at: Date;
}

export abstract class KeyEventRepository {
  abstract add(event: KeyEvent): Promise<void>;
  abstract listOf(keyId: string): Promise<KeyEvent[]>;
}

export abstract class KeyPolicyRepository {
  /** The longest lifetime a new key may have, in days; null: no cap. */
  abstract maxLifetimeDays(organizationId: string): Promise<number | null>;
  abstract setMaxLifetimeDays(organizationId: string, days: number | null): Promise<void>;
}
