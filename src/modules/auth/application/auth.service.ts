import { Transactional } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { AuditEntry, AuditOutcome, AuditTrail } from '../../../shared/audit/audit-trail';
import { Principal, SignInMethod } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { PasswordHasher } from '../../users/domain/password-hasher';
import { User } from '../../users/domain/user';
import { UserRepository } from '../../users/domain/user.repository';
import { RefreshToken } from '../domain/refresh-token';
import { RefreshTokenRepository } from '../domain/refresh-token.repository';
import { SamlStore } from '../domain/saml.store';
import { AccessTokens } from './access-tokens';
import { LoginLimiter } from './login-limiter';

export interface TokenPair {
  accessToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  refreshToken: string;
}

const BAD_LOGIN = 'Email or password is wrong';
const BAD_REFRESH = 'The refresh token is not valid';

@Injectable()
export class AuthService {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: PasswordHasher,
    private readonly refreshTokens: RefreshTokenRepository,
    private readonly accessTokens: AccessTokens,
    private readonly organizations: OrganizationRepository,
    private readonly limiter: LoginLimiter,
    private readonly config: AppConfig,
    private readonly saml: SamlStore,
    private readonly audit: AuditTrail,
  ) {}

  /** Unknown email and wrong password answer alike, after the same argon2 work. */
  async login(email: string, password: string, ip: string): Promise<TokenPair> {
    await this.limiter.attempt(ip, email);
    const user = await this.users.findByEmail(email);
    const valid = user?.passwordHash ? await this.hasher.verify(user.passwordHash, password) : await this.hasher.verifyDummy(password);
    if (!user || !valid || !user.canSignIn) {
      // An unknown email belongs to no organization: there is no log to write it in.
      if (user) await this.audit.record(signInEntry(user, 'password', 'failure'));
      throw new DomainError('INVALID_CREDENTIALS', BAD_LOGIN);
    }
    // Enforced SSO: only admins keep a password login, as a break-glass.
    const sso = user.role === 'admin' ? null : await this.saml.settings(user.organizationId);
    if (sso?.enabled && sso.enforced) {
      await this.audit.record(signInEntry(user, 'password', 'denied'));
      throw new DomainError('FORBIDDEN', 'This organization signs in through SSO (GET /api/auth/saml/<organization>/login)');
    }
    return this.signedIn(user);
  }

  @Transactional()
  private async signedIn(user: User): Promise<TokenPair> {
    await this.audit.record(signInEntry(user, 'password', 'success'));
    return this.issue(user, { via: 'password' });
  }

  /**
   * Rotation: the presented token is retired and a new one of the same family issued. A token
   * presented a second time means it leaked: the whole family is revoked (and that revocation
   * commits, even though the request fails).
   */
  async refresh(token: string): Promise<TokenPair> {
    const pair = await this.rotate(RefreshToken.hash(token));
    if (!pair) throw new DomainError('INVALID_CREDENTIALS', BAD_REFRESH);
    return pair;
  }

  @Transactional()
  private async rotate(tokenHash: string): Promise<TokenPair | null> {
    const record = await this.refreshTokens.findByHash(tokenHash);
    if (!record) return null;
    if (record.alreadyUsed || !(await this.refreshTokens.markUsed(record.props.id))) {
      await this.refreshTokens.revokeFamily(record.props.familyId);
      return null;
    }
    if (!record.isActive()) return null;
    const user = await this.users.findById(record.props.organizationId, record.props.userId);
    if (!user?.canSignIn || user.credentialsVersion !== record.props.credentialsVersion) return null;
    return this.issue(user, { familyId: record.props.familyId, via: record.props.via });
  }

  /**
   * Ends the session the refresh token belongs to (its whole family) and the access token it
   * was called with. Access tokens are not tied to a session, so every access token of the
   * user ends with it; the user's other sessions get new ones through their refresh tokens.
   */
  @Transactional()
  async logout(caller: Principal, token: string): Promise<void> {
    const record = await this.refreshTokens.findByHash(RefreshToken.hash(token));
    if (record && record.props.userId === caller.userId) await this.refreshTokens.revokeFamily(record.props.familyId);
    const user = await this.users.findById(caller.organizationId, caller.userId);
    if (!user) return;
    user.endSessions();
    await this.users.update(user);
    // The other sessions' refresh tokens carry the old version: move them along, so only this session ends.
    await this.refreshTokens.moveToVersion(user.id, user.credentialsVersion, record?.props.familyId);
    await this.audit.record({
      organizationId: user.organizationId,
      action: 'auth.signed_out',
      target: { type: 'user', id: user.id, name: user.email },
    });
  }

  /**
   * Single logout: ends these sessions (refresh-token families) of the user, as logout ends
   * one. Access tokens are not tied to a session, so every access token of the user ends too;
   * the user's other sessions get new ones through their refresh tokens. The audit log records
   * the sign-out by the user, `via` the single logout's protocol. False when the user is gone.
   */
  @Transactional()
  async endSessions(organizationId: string, userId: string, familyIds: readonly string[], via: SignInMethod): Promise<boolean> {
    const user = await this.users.findById(organizationId, userId);
    if (!user) return false;
    for (const familyId of familyIds) await this.refreshTokens.revokeFamily(familyId);
    user.endSessions();
    await this.users.update(user);
    await this.refreshTokens.moveToVersion(user.id, user.credentialsVersion);
    await this.audit.record({
      organizationId: user.organizationId,
      action: 'auth.signed_out',
      target: { type: 'user', id: user.id, name: user.email },
      actor: { type: 'user', id: user.id, name: user.email, via },
    });
    return true;
  }

  async me(caller: Principal): Promise<{ user: User; organization: Organization }> {
    const user = await this.users.findById(caller.organizationId, caller.userId);
    if (!user) throw new DomainError('UNAUTHORIZED', 'The user no longer exists');
    const organization = await this.organizations.findById(caller.organizationId);
    if (!organization) throw new DomainError('ORGANIZATION_NOT_FOUND', `Organization '${caller.organizationId}' was not found`);
    return { user, organization };
  }

  /** A token pair for a user who signed in (`via`), or for the next link of a session (`familyId`). */
  async issue(user: User, session: { familyId?: string; via?: SignInMethod | null } = {}): Promise<TokenPair> {
    const { token, record } = RefreshToken.issue({
      userId: user.id,
      organizationId: user.organizationId,
      familyId: session.familyId,
      credentialsVersion: user.credentialsVersion,
      ttlSeconds: this.config.jwt.refreshTtlSeconds,
      via: session.via,
    });
    await this.refreshTokens.insert(record);
    const accessToken = await this.accessTokens.sign(user, session.via ?? null);
    return { accessToken, tokenType: 'Bearer', expiresIn: this.config.jwt.accessTtlSeconds, refreshToken: token };
  }
}

/** A sign-in of `user`, as its organization's audit log records it: by the user when it succeeded, by an anonymous caller naming the email when not. */
export function signInEntry(user: User, via: SignInMethod, outcome: AuditOutcome): AuditEntry {
  const who = { id: user.id, name: user.email, via };
  return {
    organizationId: user.organizationId,
    action: 'auth.signed_in',
    target: { type: 'user', id: user.id, name: user.email },
    outcome,
    actor: outcome === 'success' ? { type: 'user', ...who } : { type: 'anonymous', id: null, name: user.email, via },
  };
}
