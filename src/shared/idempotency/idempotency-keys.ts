import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { jsonHash } from '../json/canonical-json';

/** How long a key answers repeats with the first result. */
const KEY_TTL = '24 hours';

export interface IdempotentRequest {
  organizationId: string;
  /** What the key is about, e.g. `agent:<id>`: the same key on another resource is another request. */
  scope: string;
  key: string;
  /** The request body; a repeat must carry the same one. */
  body: unknown;
}

/**
 * `Idempotency-Key` bookkeeping. Call `claim` inside the transaction that creates the
 * resource: a concurrent duplicate waits on the key's row lock until that transaction ends,
 * then reads the winner's resource, so twenty identical requests create one resource.
 */
@Injectable()
export class IdempotencyKeys {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * Records `resourceId` under the key and answers null, or answers the resource a live earlier
   * request with the same body created. A live key with another body: IDEMPOTENCY_KEY_REUSED.
   */
  async claim(request: IdempotentRequest, resourceId: string): Promise<string | null> {
    const hash = jsonHash(request.body);
    const params = [request.organizationId, request.scope, request.key];
    const claimed = await this.txHost.tx.query<unknown[]>(
      `INSERT INTO idempotency_keys (organization_id, scope, key, request_hash, resource_id, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, now(), now() + interval '${KEY_TTL}')
       ON CONFLICT (organization_id, scope, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, resource_id = EXCLUDED.resource_id,
             created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
         WHERE idempotency_keys.expires_at <= now()
       RETURNING resource_id`,
      [...params, hash, resourceId],
    );
    if (claimed.length) return null;
    const [existing] = await this.txHost.tx.query<Array<{ request_hash: string; resource_id: string }>>(
      'SELECT request_hash, resource_id FROM idempotency_keys WHERE organization_id = $1 AND scope = $2 AND key = $3',
      params,
    );
    if (existing.request_hash !== hash) {
      throw new DomainError(
        'IDEMPOTENCY_KEY_REUSED',
        'This Idempotency-Key was used with a different request in the last 24 hours; send a new key',
      );
    }
    return existing.resource_id;
  }

  /** Forgets keys past their window; answers how many. */
  async purgeExpired(): Promise<number> {
    const [{ count }] = await this.txHost.tx.query<Array<{ count: string }>>(
      `WITH gone AS (
         DELETE FROM idempotency_keys
         WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT 1000)
         RETURNING 1
       ) SELECT count(*) AS count FROM gone`,
    );
    return Number(count);
  }
}

/** The `Idempotency-Key` header: absent, or 1 to 255 visible ASCII characters. */
export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(value)) {
    const message = 'Idempotency-Key must be 1 to 255 visible ASCII characters';
    throw new DomainError('VALIDATION_FAILED', message, [{ path: 'Idempotency-Key', message }]);
  }
  return value;
}
