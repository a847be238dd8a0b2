import { randomUUID } from 'node:crypto';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';
import { KeyKind, newKeySecret } from './key-secret';

export const DEFAULT_LIFETIME_DAYS = 90;
export const MAX_GRACE_SECONDS = 7 * 86_400;
const DAY_MS = 86_400_000;

export interface KeyOwner {
  type: 'service_account' | 'user';
  id: string;
}

export interface ApiKeyProps {
  id: string;
  organizationId: string;
  owner: KeyOwner;
  name: string;
  /** null: everything the owner's role allows. */
  scopes: Scope[] | null;
  displayPrefix: string;
  hash: string;
  /** The secret before the last rotation, accepted until `previousExpiresAt`. */
  previousHash: string | null;
  previousExpiresAt: Date | null;
  /** A personal key works while its user's keys version is this one (a password change raises it). */
  ownerVersion: number;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** When a new key expires: what was asked, within the organization's cap (days, or none). */
export function expiryOf(requested: Date | null | undefined, capDays: number | null, now = new Date()): Date | null {
  const cap = capDays === null ? null : new Date(now.getTime() + capDays * DAY_MS);
  if (requested === undefined) return new Date(now.getTime() + Math.min(DEFAULT_LIFETIME_DAYS, capDays ?? DEFAULT_LIFETIME_DAYS) * DAY_MS);
  if (requested === null) {
    if (cap) throw invalid('expiresAt', `Keys of this organization must expire within ${capDays} days`);
    return null;
  }
  if (requested.getTime() <= now.getTime()) throw invalid('expiresAt', 'expiresAt must be in the future');
  if (cap && requested > cap) throw invalid('expiresAt', `Keys of this organization must expire within ${capDays} days`);
  return requested;
}

/** A credential for scripts and services: a hash of its secret, never the secret. */
export class ApiKey {
  private constructor(private props: ApiKeyProps) {}

  /** A new key and its secret, shown once. */
  static issue(input: {
    organizationId: string;
    owner: KeyOwner;
    name: string;
    scopes: Scope[] | null;
    expiresAt: Date | null;
    ownerVersion: number;
  }): { key: ApiKey; secret: string } {
    const secret = newKeySecret(kindOf(input.owner));
    const key = new ApiKey({
      id: randomUUID(),
      ...input,
      scopes: input.scopes ? [...new Set(input.scopes)] : null,
      displayPrefix: secret.displayPrefix,
      hash: secret.hash,
      previousHash: null,
      previousExpiresAt: null,
      createdAt: new Date(),
      lastUsedAt: null,
      revokedAt: null,
    });
    return { key, secret: secret.key };
  }

  static rehydrate(props: ApiKeyProps): ApiKey {
    return new ApiKey({ ...props });
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get owner() {
    return this.props.owner;
  }
  get revoked() {
    return this.props.revokedAt !== null;
  }

  /** A new secret; the current one keeps working for `graceSeconds`. */
  rotate(graceSeconds: number, now = new Date()): string {
    if (this.revoked) throw new DomainError('API_KEY_NOT_FOUND', 'API key not found');
    const secret = newKeySecret(kindOf(this.props.owner));
    this.props = {
      ...this.props,
      previousHash: graceSeconds > 0 ? this.props.hash : null,
      previousExpiresAt: graceSeconds > 0 ? new Date(now.getTime() + graceSeconds * 1000) : null,
      hash: secret.hash,
      displayPrefix: secret.displayPrefix,
    };
    return secret.key;
  }

  revoke(now = new Date()): void {
    this.props = { ...this.props, revokedAt: this.props.revokedAt ?? now, previousHash: null, previousExpiresAt: null };
  }

  toProps(): ApiKeyProps {
    return { ...this.props };
  }
}

function kindOf(owner: KeyOwner): KeyKind {
  return owner.type === 'service_account' ? 'service_account' : 'personal';
}

function invalid(path: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message, [{ path, message }]);
}
