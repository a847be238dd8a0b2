import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { LoginCode } from '../domain/login-code';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { SamlSettings } from '../domain/saml-settings';
import { SamlSpKey } from '../domain/saml-sp-key';
import { REQUEST_TTL_MS, SamlSession, SamlStore } from '../domain/saml.store';

/*
 * In-memory fakes of the auth module's own ports, for the unit specs. Like the Postgres
 * adapters they keep copies, not the caller's objects: a change the service does not save is
 * not seen by the next read. The fakes of other modules' ports stand beside those ports
 * (`user.repository.fake.ts`, ...).
 */

/** @Transactional() methods need a TransactionHost; the fakes have no transactions to open. Call once per spec file. */
export function runTransactionsInline(): void {
  inlineTransactions();
}

export class InMemoryRefreshTokenRepository extends RefreshTokenRepository {
  private readonly rows = new Map<string, RefreshToken['props']>();

  all(): RefreshToken[] {
    return [...this.rows.values()].map((props) => RefreshToken.rehydrate(props));
  }

  async findByHash(tokenHash: string): Promise<RefreshToken | null> {
    const props = [...this.rows.values()].find((p) => p.tokenHash === tokenHash);
    return props ? RefreshToken.rehydrate(props) : null;
  }

  async insert(token: RefreshToken): Promise<void> {
    this.rows.set(token.props.id, { ...token.props });
  }

  async markUsed(id: string): Promise<boolean> {
    const props = this.rows.get(id);
    if (!props || props.usedAt || props.revokedAt) return false;
    this.rows.set(id, { ...props, usedAt: new Date() });
    return true;
  }

  async revokeFamily(familyId: string): Promise<void> {
    for (const props of this.rows.values()) {
      if (props.familyId === familyId && !props.revokedAt) this.rows.set(props.id, { ...props, revokedAt: new Date() });
    }
  }

  async moveToVersion(userId: string, version: number, exceptFamily?: string): Promise<void> {
    for (const props of this.rows.values()) {
      if (props.userId === userId && !props.revokedAt && !props.usedAt && props.familyId !== exceptFamily) {
        this.rows.set(props.id, { ...props, credentialsVersion: version });
      }
    }
  }
}

export class InMemorySamlStore extends SamlStore {
  private readonly settingsRows = new Map<string, string>();
  private readonly requests = new Map<string, { organizationId: string; createdAt: Date; usedAt: Date | null }>();
  private readonly codes = new Map<string, LoginCode>();
  private readonly keys = new Map<string, SamlSpKey['props']>();
  private readonly sessions = new Map<string, SamlSession>();
  private readonly assertions = new Map<string, Date>();

  async settings(organizationId: string): Promise<SamlSettings | null> {
    const json = this.settingsRows.get(organizationId);
    return json ? (JSON.parse(json) as SamlSettings) : null;
  }

  async saveSettings(organizationId: string, settings: SamlSettings): Promise<void> {
    this.settingsRows.set(organizationId, JSON.stringify(settings));
  }

  async deleteSettings(organizationId: string): Promise<boolean> {
    return this.settingsRows.delete(organizationId);
  }

  async saveRequest(organizationId: string, id: string): Promise<void> {
    if (!this.requests.has(id)) this.requests.set(id, { organizationId, createdAt: new Date(), usedAt: null });
  }

  async pendingRequest(organizationId: string, id: string): Promise<Date | null> {
    const request = this.requests.get(id);
    const live = request && request.organizationId === organizationId && !request.usedAt && !expired(request.createdAt);
    return live ? request.createdAt : null;
  }

  async useRequest(organizationId: string, id: string): Promise<boolean> {
    const request = this.requests.get(id);
    if (!request || request.organizationId !== organizationId || request.usedAt) return false;
    request.usedAt = new Date();
    return true;
  }

  async saveCode(code: LoginCode): Promise<void> {
    this.codes.set(code.props.codeHash, LoginCode.rehydrate(code.props));
  }

  async takeCode(codeHash: string): Promise<LoginCode | null> {
    const code = this.codes.get(codeHash) ?? null;
    this.codes.delete(codeHash);
    return code;
  }

  async spKeys(organizationId: string): Promise<SamlSpKey[]> {
    return [...this.keys.values()].filter((k) => k.organizationId === organizationId).map((k) => SamlSpKey.rehydrate(k));
  }

  async addSpKey(key: SamlSpKey): Promise<boolean> {
    if ([...this.keys.values()].some((k) => k.organizationId === key.props.organizationId && k.retireAt === null)) return false;
    this.keys.set(key.props.id, { ...key.props });
    return true;
  }

  async retireSpKey(organizationId: string, id: string, retireAt: Date): Promise<void> {
    const key = this.keys.get(id);
    if (key?.organizationId === organizationId) this.keys.set(id, { ...key, retireAt });
  }

  async saveSession(session: SamlSession): Promise<void> {
    this.sessions.set(session.familyId, { ...session });
  }

  async sessionsNamed(organizationId: string, nameId: string, sessionIndex: string | null): Promise<SamlSession[]> {
    return [...this.sessions.values()].filter(
      (s) =>
        s.organizationId === organizationId &&
        s.nameId === nameId &&
        (sessionIndex === null || s.sessionIndex === sessionIndex) &&
        s.expiresAt > new Date(),
    );
  }

  async sessionsOfUser(organizationId: string, userId: string): Promise<SamlSession[]> {
    return [...this.sessions.values()].filter((s) => s.organizationId === organizationId && s.userId === userId).reverse();
  }

  async deleteSessions(familyIds: string[]): Promise<void> {
    for (const id of familyIds) this.sessions.delete(id);
  }

  async claimAssertion(organizationId: string, assertionId: string, expiresAt: Date): Promise<boolean> {
    const key = `${organizationId}/${assertionId}`;
    if (this.assertions.has(key)) return false;
    this.assertions.set(key, expiresAt);
    return true;
  }

  async purge(): Promise<void> {
    for (const [id, request] of this.requests) if (expired(request.createdAt)) this.requests.delete(id);
    for (const [hash, code] of this.codes) if (!code.isLive()) this.codes.delete(hash);
  }
}

function expired(createdAt: Date): boolean {
  return createdAt.getTime() + REQUEST_TTL_MS <= Date.now();
}
