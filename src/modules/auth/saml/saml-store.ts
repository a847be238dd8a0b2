import { createHash, randomBytes } from 'node:crypto';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { CacheItem, CacheProvider } from '@node-saml/passport-saml';
import { SamlSettings } from './saml-settings';

/** How long an AuthnRequest may wait for its answer. */
export const REQUEST_TTL_MS = 10 * 60_000;
/** How long a one-time sign-in code lives. */
const CODE_TTL_SECONDS = 60;

/**
 * The AuthnRequest ids of one ACS request's validation, in Postgres so any instance can take
 * the answer. node-saml reads an id (`getAsync`) and, once the response checks out, removes
 * it (`removeAsync`); here removing is a guarded UPDATE, and `claimed` tells whether this
 * request was the one that used it, so a replay racing the original loses on any instance.
 */
export class RequestIdCache implements CacheProvider {
  claimed = false;

  constructor(
    private readonly store: SamlStore,
    private readonly organizationId: string,
  ) {}

  async saveAsync(key: string, value: string): Promise<CacheItem | null> {
    await this.store.saveRequest(this.organizationId, key);
    return { value, createdAt: Date.now() };
  }

  getAsync(key: string): Promise<string | null> {
    return this.store.pendingRequest(this.organizationId, key);
  }

  async removeAsync(key: string | null): Promise<string | null> {
    if (!key) return null;
    const used = await this.store.useRequest(this.organizationId, key);
    this.claimed ||= used;
    return used ? key : null;
  }
}

/** SAML's rows: settings per organization, pending AuthnRequest ids, one-time codes. */
@Injectable()
export class SamlStore {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async settings(organizationId: string): Promise<SamlSettings | null> {
    const [row] = await this.query<{ settings: SamlSettings }>('SELECT settings FROM saml_settings WHERE organization_id = $1', [
      organizationId,
    ]);
    return row?.settings ?? null;
  }

  async saveSettings(organizationId: string, settings: SamlSettings): Promise<void> {
    await this.query(
      `INSERT INTO saml_settings (organization_id, settings, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (organization_id) DO UPDATE SET settings = EXCLUDED.settings, updated_at = now()`,
      [organizationId, JSON.stringify(settings)],
    );
  }

  async deleteSettings(organizationId: string): Promise<boolean> {
    const rows = await this.query('WITH gone AS (DELETE FROM saml_settings WHERE organization_id = $1 RETURNING 1) SELECT * FROM gone', [
      organizationId,
    ]);
    return rows.length > 0;
  }

  async saveRequest(organizationId: string, id: string): Promise<void> {
    await this.query(
      `INSERT INTO saml_requests (id, organization_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3::double precision / 1000))
       ON CONFLICT (id) DO NOTHING`,
      [id, organizationId, REQUEST_TTL_MS],
    );
  }

  /** When the request was made, as node-saml wants it, while it is unused and unexpired. */
  async pendingRequest(organizationId: string, id: string): Promise<string | null> {
    const [row] = await this.query<{ created: Date }>(
      `SELECT expires_at - make_interval(secs => $3::double precision / 1000) AS created FROM saml_requests
       WHERE id = $1 AND organization_id = $2 AND used_at IS NULL AND expires_at > now()`,
      [id, organizationId, REQUEST_TTL_MS],
    );
    return row ? new Date(row.created).toISOString() : null;
  }

  /** Marks the request answered; true for the one caller that did. */
  async useRequest(organizationId: string, id: string): Promise<boolean> {
    const rows = await this.query(
      `WITH used AS (UPDATE saml_requests SET used_at = now() WHERE id = $1 AND organization_id = $2 AND used_at IS NULL RETURNING 1)
       SELECT * FROM used`,
      [id, organizationId],
    );
    return rows.length > 0;
  }

  async issueCode(organizationId: string, userId: string): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    await this.query(
      `INSERT INTO saml_login_codes (code_hash, user_id, organization_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
      [hash(code), userId, organizationId, CODE_TTL_SECONDS],
    );
    return code;
  }

  /** The code's user, once: the code is gone after this, used or expired. */
  async useCode(code: string): Promise<{ userId: string; organizationId: string } | null> {
    const [row] = await this.query<{ user_id: string; organization_id: string; live: boolean }>(
      `WITH used AS (DELETE FROM saml_login_codes WHERE code_hash = $1 RETURNING user_id, organization_id, expires_at > now() AS live)
       SELECT * FROM used`,
      [hash(code)],
    );
    return row?.live ? { userId: row.user_id, organizationId: row.organization_id } : null;
  }

  /** Forgets answered or expired requests and codes. */
  async purge(): Promise<void> {
    await this.query(`DELETE FROM saml_requests WHERE expires_at < now() - interval '1 day'`, []);
    await this.query(`DELETE FROM saml_login_codes WHERE expires_at < now()`, []);
  }

  private query<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}

const hash = (code: string) => createHash('sha256').update(code).digest('hex');
