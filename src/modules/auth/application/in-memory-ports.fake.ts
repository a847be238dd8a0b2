import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { LoginCode } from '../domain/login-code';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { SamlSettings } from '../domain/saml-settings';
import { REQUEST_TTL_MS, SamlStore } from '../domain/saml.store';

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

  async purge(): Promise<void> {
    for (const [id, request] of this.requests) if (expired(request.createdAt)) this.requests.delete(id);
    for (const [hash, code] of this.codes) if (!code.isLive()) this.codes.delete(hash);
  }
}

function expired(createdAt: Date): boolean {
  return createdAt.getTime() + REQUEST_TTL_MS <= Date.now();
}
