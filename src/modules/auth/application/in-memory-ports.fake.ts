import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { PasswordHasher } from '../../users/domain/password-hasher';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { LoginCode } from '../domain/login-code';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { SamlSettings } from '../domain/saml-settings';
import { REQUEST_TTL_MS, SamlStore } from '../domain/saml.store';

/*
 * In-memory fakes of the ports the auth services use, for their unit specs. Like the Postgres
 * adapters they keep copies, not the caller's objects: a change the service does not save is
 * not seen by the next read.
 */

/** @Transactional() methods need a TransactionHost; the fakes have no transactions to open. Call once per spec file. */
export function runTransactionsInline(): void {
  inlineTransactions();
}

export class InMemoryUserRepository extends UserRepository {
  private readonly rows = new Map<string, ReturnType<User['toProps']>>();

  /** Test setup: stores the user as it is. */
  add(user: User): User {
    this.rows.set(user.id, user.toProps());
    return user;
  }

  all(): User[] {
    return [...this.rows.values()].map((props) => User.rehydrate(props));
  }

  async findById(organizationId: string, id: string): Promise<User | null> {
    const props = this.rows.get(id);
    return props && props.organizationId === organizationId ? User.rehydrate(props) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const props = [...this.rows.values()].find((p) => p.email === User.normalizeEmail(email));
    return props ? User.rehydrate(props) : null;
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<User>> {
    const data = this.all().filter((u) => u.organizationId === organizationId);
    return { data: data.slice(0, page.limit), nextCursor: null };
  }

  async insert(user: User): Promise<void> {
    if ([...this.rows.values()].some((p) => p.email === user.email)) throw new Error(`duplicate email ${user.email}`);
    this.rows.set(user.id, user.toProps());
  }

  async update(user: User): Promise<void> {
    if (this.rows.has(user.id)) this.rows.set(user.id, user.toProps());
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    if (this.rows.get(id)?.organizationId !== organizationId) return false;
    return this.rows.delete(id);
  }

  /** One process, no transactions: nothing to lock. */
  async lockSeats(): Promise<void> {}

  async count(): Promise<number> {
    return this.rows.size;
  }

  async countInOrganization(organizationId: string): Promise<number> {
    return [...this.rows.values()].filter((p) => p.organizationId === organizationId).length;
  }
}

export class InMemoryOrganizationRepository extends OrganizationRepository {
  private readonly rows = new Map<string, ReturnType<Organization['toProps']>>();

  /** Test setup: stores the organization as it is. */
  add(organization: Organization): Organization {
    this.rows.set(organization.id, organization.toProps());
    return organization;
  }

  async findById(id: string): Promise<Organization | null> {
    const props = this.rows.get(id);
    return props ? Organization.rehydrate(props) : null;
  }

  async findBySlug(slug: string): Promise<Organization | null> {
    const props = [...this.rows.values()].find((p) => p.slug === slug);
    return props ? Organization.rehydrate(props) : null;
  }

  async list(page: PageRequest): Promise<Page<Organization>> {
    return { data: [...this.rows.values()].slice(0, page.limit).map((p) => Organization.rehydrate(p)), nextCursor: null };
  }

  async insert(organization: Organization): Promise<void> {
    this.rows.set(organization.id, organization.toProps());
  }

  async update(organization: Organization): Promise<void> {
    if (this.rows.has(organization.id)) this.rows.set(organization.id, organization.toProps());
  }

  async exists(): Promise<boolean> {
    return this.rows.size > 0;
  }

  async count(): Promise<number> {
    return this.rows.size;
  }
}

/** Not argon2: a readable stand-in with the same contract. */
export class FakePasswordHasher extends PasswordHasher {
  async hash(password: string): Promise<string> {
    return `hashed:${password}`;
  }

  async verify(hash: string, password: string): Promise<boolean> {
    return hash === `hashed:${password}`;
  }

  async verifyDummy(): Promise<false> {
    return false;
  }
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
