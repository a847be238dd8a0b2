import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { SecretBox } from '../../../shared/crypto/secret-box';
import { LoginCode } from '../domain/login-code';
import { SamlSettings, withDefaults } from '../domain/saml-settings';
import { SamlSpKey } from '../domain/saml-sp-key';
import { REQUEST_TTL_MS, SamlSession, SamlStore } from '../domain/saml.store';

interface SessionRow {
  family_id: string;
  organization_id: string;
  user_id: string;
  name_id: string;
  name_id_format: string | null;
  session_index: string | null;
  expires_at: Date;
}

/**
 * SAML's rows in Postgres (saml.orm-entities.ts), through whatever transaction the use case
 * opened. Using a request or a code is one guarded statement, so of two instances racing for
 * it exactly one wins.
 */
@Injectable()
export class TypeOrmSamlStore extends SamlStore {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    /** SP private keys are sealed at rest (SECRETS_KEY), each bound to its row. */
    private readonly box: SecretBox,
  ) {
    super();
  }

  async settings(organizationId: string): Promise<SamlSettings | null> {
    const [row] = await this.query<{ settings: SamlSettings }>('SELECT settings FROM saml_settings WHERE organization_id = $1', [
      organizationId,
    ]);
    return row ? withDefaults(row.settings) : null;
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
    const { codeHash, userId, organizationId, via, familyId, expiresAt } = code.props;
    await this.query(
      `INSERT INTO saml_login_codes (code_hash, user_id, organization_id, via, family_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [codeHash, userId, organizationId, via, familyId ?? null, expiresAt],
    );
  }

  async takeCode(codeHash: string): Promise<LoginCode | null> {
    const [row] = await this.query<{
      user_id: string;
      organization_id: string;
      via: LoginCode['props']['via'];
      family_id: string | null;
      expires_at: Date;
    }>(
      `WITH taken AS (DELETE FROM saml_login_codes WHERE code_hash = $1 RETURNING user_id, organization_id, via, family_id, expires_at)
       SELECT * FROM taken`,
      [codeHash],
    );
    return row
      ? LoginCode.rehydrate({
          codeHash,
          userId: row.user_id,
          organizationId: row.organization_id,
          via: row.via,
          familyId: row.family_id,
          expiresAt: new Date(row.expires_at),
        })
      : null;
  }

  async spKeys(organizationId: string): Promise<SamlSpKey[]> {
    const rows = await this.query<{ id: string; certificate: string; private_key: string; created_at: Date; retire_at: Date | null }>(
      `SELECT id, certificate, private_key, created_at, retire_at FROM saml_sp_keys WHERE organization_id = $1 ORDER BY created_at DESC`,
      [organizationId],
    );
    return rows.map((row) =>
      SamlSpKey.rehydrate({
        id: row.id,
        organizationId,
        certificate: row.certificate,
        privateKey: this.box.open(row.private_key, spKeyOwner(row.id)),
        createdAt: new Date(row.created_at),
        retireAt: row.retire_at ? new Date(row.retire_at) : null,
      }),
    );
  }

  async addSpKey(key: SamlSpKey): Promise<boolean> {
    const { id, organizationId, certificate, privateKey, createdAt } = key.props;
    const rows = await this.query(
      `WITH added AS (
         INSERT INTO saml_sp_keys (id, organization_id, certificate, private_key, created_at, retire_at) VALUES ($1, $2, $3, $4, $5, NULL)
         ON CONFLICT (organization_id) WHERE retire_at IS NULL DO NOTHING RETURNING 1)
       SELECT * FROM added`,
      [id, organizationId, certificate, this.box.seal(privateKey, spKeyOwner(id)), createdAt],
    );
    return rows.length > 0;
  }

  async retireSpKey(organizationId: string, id: string, retireAt: Date): Promise<void> {
    await this.query(`UPDATE saml_sp_keys SET retire_at = $3 WHERE organization_id = $1 AND id = $2`, [organizationId, id, retireAt]);
  }

  async saveSession(session: SamlSession): Promise<void> {
    await this.query(
      `INSERT INTO saml_sessions (family_id, organization_id, user_id, name_id, name_id_format, session_index, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        session.familyId,
        session.organizationId,
        session.userId,
        session.nameId,
        session.nameIdFormat,
        session.sessionIndex,
        session.expiresAt,
      ],
    );
  }

  async sessionsNamed(organizationId: string, nameId: string, sessionIndex: string | null): Promise<SamlSession[]> {
    const rows = await this.query<SessionRow>(
      `SELECT * FROM saml_sessions WHERE organization_id = $1 AND name_id = $2 AND ($3::varchar IS NULL OR session_index = $3)
         AND expires_at > now()`,
      [organizationId, nameId, sessionIndex],
    );
    return rows.map(toSession);
  }

  async sessionsOfUser(organizationId: string, userId: string): Promise<SamlSession[]> {
    const rows = await this.query<SessionRow>(
      `SELECT * FROM saml_sessions WHERE organization_id = $1 AND user_id = $2 AND expires_at > now() ORDER BY created_at DESC`,
      [organizationId, userId],
    );
    return rows.map(toSession);
  }

  async deleteSessions(familyIds: string[]): Promise<void> {
    if (familyIds.length) await this.query(`DELETE FROM saml_sessions WHERE family_id = ANY($1::uuid[])`, [familyIds]);
  }

  async claimAssertion(organizationId: string, assertionId: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.query(
      `WITH claimed AS (
         INSERT INTO saml_assertions (organization_id, id, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1)
       SELECT * FROM claimed`,
      [organizationId, assertionId, expiresAt],
    );
    return rows.length > 0;
  }

  async purge(): Promise<void> {
    await this.query(`DELETE FROM saml_requests WHERE expires_at < now() - interval '1 day'`, []);
    await this.query(`DELETE FROM saml_login_codes WHERE expires_at < now()`, []);
    await this.query(`DELETE FROM saml_sessions WHERE expires_at < now()`, []);
    // An assertion's ID is kept a day past its expiry, beyond any clock skew that could still accept it.
    await this.query(`DELETE FROM saml_assertions WHERE expires_at < now() - interval '1 day'`, []);
    await this.query(`DELETE FROM saml_sp_keys WHERE retire_at < now() - interval '30 days'`, []);
  }

  private query<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query<T[]>(sql, params);
  }
}

/** The associated data binding a sealed SP private key to its row. */
function spKeyOwner(id: string): string {
  return `saml_sp_key:${id}`;
}

function toSession(row: SessionRow): SamlSession {
  return {
    familyId: row.family_id,
    organizationId: row.organization_id,
    userId: row.user_id,
    nameId: row.name_id,
    nameIdFormat: row.name_id_format,
    sessionIndex: row.session_index,
    expiresAt: new Date(row.expires_at),
  };
}
