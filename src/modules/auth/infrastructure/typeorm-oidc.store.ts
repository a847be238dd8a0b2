import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { SecretBox } from '../../../shared/crypto/secret-box';
import { OidcLogin } from '../domain/oidc-login';
import { OidcSettings } from '../domain/oidc-settings';
import { OidcStore, StoredOidcSettings } from '../domain/oidc.store';

/** The client secret's associated data: a sealed secret cannot be moved to another organization's row. */
const owner = (organizationId: string) => `oidc:${organizationId}`;

/**
 * OpenID Connect's rows in Postgres (oidc.orm-entities.ts), through whatever transaction the
 * use case opened. The client secret is sealed with the secrets key. Taking a pending sign-in
 * is one guarded statement, so of two instances racing for it exactly one wins.
 */
@Injectable()
export class TypeOrmOidcStore extends OidcStore {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly box: SecretBox,
  ) {
    super();
  }

  async settings(organizationId: string): Promise<StoredOidcSettings | null> {
    const [row] = await this.query<{
      settings: Partial<OidcSettings> & Omit<OidcSettings, 'allowUnverifiedEmail'>;
      sealed_client_secret: string;
      updated_at: Date;
    }>('SELECT settings, sealed_client_secret, updated_at FROM oidc_settings WHERE organization_id = $1', [organizationId]);
    if (!row) return null;
    return {
      // Settings saved before a field existed have its default.
      settings: { allowUnverifiedEmail: false, ...row.settings },
      clientSecret: this.box.open(row.sealed_client_secret, owner(organizationId)),
      updatedAt: new Date(row.updated_at),
    };
  }

  async saveSettings(organizationId: string, settings: OidcSettings, clientSecret: string): Promise<void> {
    await this.query(
      `INSERT INTO oidc_settings (organization_id, settings, sealed_client_secret, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (organization_id) DO UPDATE
         SET settings = EXCLUDED.settings, sealed_client_secret = EXCLUDED.sealed_client_secret, updated_at = now()`,
      [organizationId, JSON.stringify(settings), this.box.seal(clientSecret, owner(organizationId))],
    );
  }

  async deleteSettings(organizationId: string): Promise<boolean> {
    const rows = await this.query('WITH gone AS (DELETE FROM oidc_settings WHERE organization_id = $1 RETURNING 1) SELECT * FROM gone', [
      organizationId,
    ]);
    return rows.length > 0;
  }

  async saveLogin(login: OidcLogin): Promise<void> {
    const { stateHash, organizationId, nonce, codeVerifier, redirect, expiresAt } = login.props;
    await this.query(
      `INSERT INTO oidc_logins (state_hash, organization_id, nonce, code_verifier, redirect, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [stateHash, organizationId, nonce, codeVerifier, redirect, expiresAt],
    );
  }

  async takeLogin(organizationId: string, stateHash: string): Promise<OidcLogin | null> {
    const [row] = await this.query<{ nonce: string; code_verifier: string; redirect: string | null; expires_at: Date }>(
      `WITH used AS (
         UPDATE oidc_logins SET used_at = now()
          WHERE state_hash = $1 AND organization_id = $2 AND used_at IS NULL AND expires_at > now()
          RETURNING nonce, code_verifier, redirect, expires_at)
       SELECT * FROM used`,
      [stateHash, organizationId],
    );
    return row
      ? OidcLogin.rehydrate({
          stateHash,
          organizationId,
          nonce: row.nonce,
          codeVerifier: row.code_verifier,
          redirect: row.redirect,
          expiresAt: new Date(row.expires_at),
        })
      : null;
  }

  async linkedUser(organizationId: string, issuer: string, subject: string): Promise<string | null> {
    const [row] = await this.query<{ user_id: string }>(
      'SELECT user_id FROM oidc_identities WHERE organization_id = $1 AND issuer = $2 AND subject = $3',
      [organizationId, issuer, subject],
    );
    return row?.user_id ?? null;
  }

  async linkedSubject(organizationId: string, issuer: string, userId: string): Promise<string | null> {
    const [row] = await this.query<{ subject: string }>(
      'SELECT subject FROM oidc_identities WHERE organization_id = $1 AND issuer = $2 AND user_id = $3',
      [organizationId, issuer, userId],
    );
    return row?.subject ?? null;
  }

  async link(organizationId: string, issuer: string, subject: string, userId: string): Promise<boolean> {
    const rows = await this.query(
      `WITH linked AS (
         INSERT INTO oidc_identities (organization_id, issuer, subject, user_id) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING 1)
       SELECT * FROM linked`,
      [organizationId, issuer, subject, userId],
    );
    return rows.length > 0;
  }

  async purge(): Promise<void> {
    await this.query(`DELETE FROM oidc_logins WHERE expires_at < now() - interval '1 day'`, []);
  }

  private query<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}
