import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { LoginCode } from '../domain/login-code';
import { SamlSettings } from '../domain/saml-settings';
import { REQUEST_TTL_MS, SamlStore } from '../domain/saml.store';

/**
 * SAML's rows in Postgres (saml.orm-entities.ts), through whatever transaction the use case
 * opened. Using a request or a code is one guarded statement, so of two instances racing for
 * it exactly one wins.
 */
@Injectable()
export class TypeOrmSamlStore extends SamlStore {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    super();
  }

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

  async pendingRequest(organizationId: string, id: string): Promise<Date | null> {
    const [row] = await this.query<{ created: Date }>(
      `SELECT expires_at - make_interval(secs => $3::double precision / 1000) AS created FROM saml_requests
       WHERE id = $1 AND organization_id = $2 AND used_at IS NULL AND expires_at > now()`,
      [id, organizationId, REQUEST_TTL_MS],
    );
    return row ? new Date(row.created) : null;
  }

  async useRequest(organizationId: string, id: string): Promise<boolean> {
    const rows = await this.query(
      `WITH used AS (UPDATE saml_requests SET used_at = now() WHERE id = $1 AND organization_id = $2 AND used_at IS NULL RETURNING 1)
       SELECT * FROM used`,
      [id, organizationId],
    );
    return rows.length > 0;
  }

  async saveCode(code: LoginCode): Promise<void> {
    const { codeHash, userId, organizationId, expiresAt } = code.props;
    await this.query(`INSERT INTO saml_login_codes (code_hash, user_id, organization_id, expires_at) VALUES ($1, $2, $3, $4)`, [
      codeHash,
      userId,
      organizationId,
      expiresAt,
    ]);
  }

  async takeCode(codeHash: string): Promise<LoginCode | null> {
    const [row] = await this.query<{ user_id: string; organization_id: string; expires_at: Date }>(
      `WITH taken AS (DELETE FROM saml_login_codes WHERE code_hash = $1 RETURNING user_id, organization_id, expires_at)
       SELECT * FROM taken`,
      [codeHash],
    );
    return row
      ? LoginCode.rehydrate({ codeHash, userId: row.user_id, organizationId: row.organization_id, expiresAt: new Date(row.expires_at) })
      : null;
  }

  async purge(): Promise<void> {
    await this.query(`DELETE FROM saml_requests WHERE expires_at < now() - interval '1 day'`, []);
    await this.query(`DELETE FROM saml_login_codes WHERE expires_at < now()`, []);
  }

  private query<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}
