import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { JwtService } from '@nestjs/jwt';
import { ThrottlerStorageService } from '@nestjs/throttler';
import { loadConfig } from '../../../config/app-config';
import { Principal, Role } from '../../../shared/auth/principal';
import { Organization } from '../../organizations/domain/organization';
import { InMemoryOrganizationRepository } from '../../organizations/domain/organization.repository.fake';
import { FakePasswordHasher } from '../../users/domain/password-hasher.fake';
import { User } from '../../users/domain/user';
import { InMemoryUserRepository } from '../../users/domain/user.repository.fake';
import { DEFAULT_ATTRIBUTES, SamlSettings } from '../domain/saml-settings';
import { AccessTokens } from './access-tokens';
import { AuthService } from './auth.service';
import { InMemoryRefreshTokenRepository, InMemorySamlStore, runTransactionsInline } from './in-memory-ports.fake';
import { LoginLimiter } from './login-limiter';

const PASSWORD = 'correct horse battery staple';
const IP = '203.0.113.7';
const config = loadConfig({
  NODE_ENV: 'test',
  JWT_SECRET: 'a unit-test secret of at least 32 bytes',
  SECRETS_KEY: '0'.repeat(64),
  REFRESH_TOKEN_TTL_SECONDS: '3600',
});

runTransactionsInline();

describe('AuthService', () => {
  let users: InMemoryUserRepository;
  let organizations: InMemoryOrganizationRepository;
  let refreshTokens: InMemoryRefreshTokenRepository;
  let saml: InMemorySamlStore;
  let throttlerStorage: ThrottlerStorageService;
  let accessTokens: AccessTokens;
  let auth: AuthService;
  let audit: RecordingAuditTrail;
  let organization: Organization;
  let hasher: FakePasswordHasher;

  beforeEach(() => {
    users = new InMemoryUserRepository();
    organizations = new InMemoryOrganizationRepository();
    refreshTokens = new InMemoryRefreshTokenRepository();
    saml = new InMemorySamlStore();
    hasher = new FakePasswordHasher();
    throttlerStorage = new ThrottlerStorageService();
    const { secret, issuer, audience, accessTtlSeconds } = config.jwt;
    accessTokens = new AccessTokens(
      new JwtService({
        secret,
        signOptions: { algorithm: 'HS256', issuer, audience, expiresIn: accessTtlSeconds },
        verifyOptions: { algorithms: ['HS256'], issuer, audience },
      }),
    );
    audit = new RecordingAuditTrail();
    auth = new AuthService(
      users,
      hasher,
      refreshTokens,
      accessTokens,
      organizations,
      new LoginLimiter(throttlerStorage, config),
      config,
      saml,
      audit,
    );
    organization = organizations.add(Organization.create({ slug: 'acme', name: 'Acme', tier: 'enterprise' }));
  });

  afterEach(() => {
    throttlerStorage.onApplicationShutdown();
    jest.useRealTimers();
  });

  async function addUser(email: string, role: Role = 'member', options: { password?: string | null; isOperator?: boolean } = {}) {
    const password = options.password === undefined ? PASSWORD : options.password;
    return users.add(
      User.create({
        organizationId: organization.id,
        email,
        role,
        isOperator: options.isOperator,
        passwordHash: password === null ? null : await hasher.hash(password),
      }),
    );
  }

  function principal(user: User): Principal {
    return {
      userId: user.id,
      organizationId: user.organizationId,
      role: user.role,
      isOperator: user.isOperator,
      email: user.email,
      credential: { type: 'session' },
    };
  }

  async function saveSso(patch: Partial<SamlSettings>) {
    await saml.saveSettings(organization.id, {
      idpEntityId: 'https://idp.test',
      idpSsoUrl: 'https://idp.test/sso',
      idpSloUrl: null,
      idpCertificates: [],
      attributes: DEFAULT_ATTRIBUTES,
      roleMappings: [],
      defaultRole: 'viewer',
      wantResponseSigned: false,
      wantAssertionsEncrypted: false,
      allowIdpInitiated: false,
      allowedRedirects: [],
      enabled: true,
      enforced: false,
      ...patch,
    });
  }

  /** Moves the clock `seconds` ahead (only Date: promises and timers run as usual). */
  function later(seconds: number) {
    jest.useFakeTimers({
      now: Date.now() + seconds * 1000,
      doNotFake: [
        'nextTick',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
  }

  describe('login', () => {
    it('answers a token pair whose access token names the user, and whose refresh token works', async () => {
      const user = await addUser('ada@acme.test');
      const pair = await auth.login('Ada@Acme.test', PASSWORD, IP);
      expect(pair).toMatchObject({
        tokenType: 'Bearer',
        expiresIn: config.jwt.accessTtlSeconds,
        refreshToken: expect.stringMatching(/^rt_/),
      });
      const claims = await accessTokens.verify(pair.accessToken);
      expect(claims).toMatchObject({ sub: user.id, org: organization.id, role: 'member', ver: user.credentialsVersion });
      await expect(auth.refresh(pair.refreshToken)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('answers a wrong password, an unknown email and a user without a password alike', async () => {
      await addUser('ada@acme.test');
      await addUser('sso-only@acme.test', 'member', { password: null });
      const refusals = await Promise.all([
        auth.login('ada@acme.test', 'wrong password', IP).catch((e: unknown) => e),
        auth.login('nobody@acme.test', PASSWORD, IP).catch((e: unknown) => e),
        auth.login('sso-only@acme.test', PASSWORD, IP).catch((e: unknown) => e),
      ]);
      for (const refusal of refusals) expect(refusal).toMatchObject({ code: 'INVALID_CREDENTIALS', message: 'Email or password is wrong' });
      expect(refreshTokens.all()).toHaveLength(0);
    });

    it('refuses a disabled user with the right password', async () => {
      const user = await addUser('ada@acme.test');
      user.change({ disabled: true });
      await users.update(user);
      await expect(auth.login('ada@acme.test', PASSWORD, IP)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
    });

    it('refuses password login where SSO is enforced, but for admins (break-glass)', async () => {
      await addUser('member@acme.test', 'member');
      await addUser('admin@acme.test', 'admin');
      await saveSso({ enforced: true });
      await expect(auth.login('member@acme.test', PASSWORD, IP)).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await expect(auth.login('admin@acme.test', PASSWORD, IP)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('lets everyone log in with a password while SSO is not enforced or is disabled', async () => {
      await addUser('member@acme.test', 'member');
      await saveSso({ enforced: false });
      await expect(auth.login('member@acme.test', PASSWORD, IP)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await saveSso({ enforced: true, enabled: false });
      await expect(auth.login('member@acme.test', PASSWORD, IP)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('limits attempts per address and email, with a Retry-After', async () => {
      await addUser('ada@acme.test');
      for (let i = 0; i < config.loginLimits.perEmail; i++) {
        await expect(auth.login('ada@acme.test', 'wrong password', IP)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      }
      await expect(auth.login('ada@acme.test', PASSWORD, IP)).rejects.toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        headers: { 'Retry-After': expect.stringMatching(/^\d+$/) },
      });
      // Another address is not held back by this one.
      await expect(auth.login('ada@acme.test', PASSWORD, '198.51.100.1')).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('refresh', () => {
    it('rotates: a new pair of the same family, and the old refresh token is spent', async () => {
      await addUser('ada@acme.test');
      const first = await auth.login('ada@acme.test', PASSWORD, IP);
      const second = await auth.refresh(first.refreshToken);
      expect(second.refreshToken).not.toBe(first.refreshToken);
      const families = new Set(refreshTokens.all().map((t) => t.props.familyId));
      expect(families.size).toBe(1);
      await expect(auth.refresh(second.refreshToken)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('takes a reused refresh token for a leak: refused, and the whole family with it', async () => {
      await addUser('ada@acme.test');
      const first = await auth.login('ada@acme.test', PASSWORD, IP);
      const second = await auth.refresh(first.refreshToken);
      await expect(auth.refresh(first.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      // The thief's or the owner's newer token: both are gone.
      await expect(auth.refresh(second.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      expect(refreshTokens.all().every((t) => t.props.revokedAt)).toBe(true);
    });

    it("leaves the user's other sessions alone when one family is revoked", async () => {
      await addUser('ada@acme.test');
      const laptop = await auth.login('ada@acme.test', PASSWORD, IP);
      const phone = await auth.login('ada@acme.test', PASSWORD, IP);
      await auth.refresh(laptop.refreshToken);
      await expect(auth.refresh(laptop.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      await expect(auth.refresh(phone.refreshToken)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses an unknown or expired refresh token', async () => {
      await addUser('ada@acme.test');
      await expect(auth.refresh('rt_unknown')).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      const pair = await auth.login('ada@acme.test', PASSWORD, IP);
      later(config.jwt.refreshTtlSeconds + 1);
      await expect(auth.refresh(pair.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
    });

    it.each<[string, Parameters<User['change']>[0]]>([
      ['a new password', { passwordHash: 'hashed:another password' }],
      ['a role change', { role: 'viewer' }],
      ['disabling the user', { disabled: true }],
    ])('refuses the refresh token after %s', async (_, change) => {
      const user = await addUser('ada@acme.test');
      const pair = await auth.login('ada@acme.test', PASSWORD, IP);
      user.change(change);
      await users.update(user);
      await expect(auth.refresh(pair.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
    });

    it('refuses the refresh token of a deleted user', async () => {
      const user = await addUser('ada@acme.test');
      const pair = await auth.login('ada@acme.test', PASSWORD, IP);
      await users.delete(organization.id, user.id);
      await expect(auth.refresh(pair.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
    });
  });

  describe('logout', () => {
    it("ends this session and every access token of the user, but not the user's other sessions", async () => {
      const user = await addUser('ada@acme.test');
      const laptop = await auth.login('ada@acme.test', PASSWORD, IP);
      const phone = await auth.login('ada@acme.test', PASSWORD, IP);
      await auth.logout(principal(user), laptop.refreshToken);

      await expect(auth.refresh(laptop.refreshToken)).rejects.toMatchObject({ code: 'INVALID_CREDENTIALS' });
      // Access tokens carry the credentials version they were issued at; the user's is now past it.
      const stored = (await users.findById(organization.id, user.id))!;
      expect((await accessTokens.verify(laptop.accessToken)).ver).toBeLessThan(stored.credentialsVersion);
      expect((await accessTokens.verify(phone.accessToken)).ver).toBeLessThan(stored.credentialsVersion);
      // The phone gets a new access token, current again, through its refresh token.
      const renewed = await auth.refresh(phone.refreshToken);
      expect((await accessTokens.verify(renewed.accessToken)).ver).toBe(stored.credentialsVersion);
    });

    it("does not revoke another user's session with their refresh token", async () => {
      const ada = await addUser('ada@acme.test');
      await addUser('bob@acme.test');
      const bobs = await auth.login('bob@acme.test', PASSWORD, IP);
      await auth.logout(principal(ada), bobs.refreshToken);
      await expect(auth.refresh(bobs.refreshToken)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('me', () => {
    it('answers the user and the organization', async () => {
      const user = await addUser('ada@acme.test');
      const me = await auth.me(principal(user));
      expect(me.user).toMatchObject({ id: user.id, email: 'ada@acme.test' });
      expect(me.organization).toMatchObject({ id: organization.id, slug: 'acme', tier: 'enterprise' });
    });

    it('refuses a user who no longer exists', async () => {
      const user = await addUser('ada@acme.test');
      await users.delete(organization.id, user.id);
      await expect(auth.me(principal(user))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    });
  });
});
