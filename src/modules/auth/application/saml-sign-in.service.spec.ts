import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { randomUUID } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { Logger } from '@nestjs/common';
import type { Profile } from '@node-saml/passport-saml';
import { loadConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { TIER_FEATURES } from '../../licensing/domain/tiers';
import { SubscriptionService } from '../../organizations/application/subscription.service';
import { Organization } from '../../organizations/domain/organization';
import { OrganizationRepository } from '../../organizations/domain/organization.repository';
import { InMemoryOrganizationRepository } from '../../organizations/domain/organization.repository.fake';
import { NewUser, UsersService } from '../../users/application/users.service';
import { User } from '../../users/domain/user';
import { InMemoryUserRepository } from '../../users/domain/user.repository.fake';
import { DEFAULT_ATTRIBUTES, SamlSettings, serviceProviderFor } from '../domain/saml-settings';
import { InMemorySamlStore, runTransactionsInline } from './in-memory-ports.fake';
import { LoginCodes } from './login-codes';
import { RequestIdCache } from './request-id-cache';
import { SamlSignInService } from './saml-sign-in.service';
import { SamlSpKeysService } from './saml-sp-keys.service';
import { SsoAccounts } from './sso-accounts';

const config = loadConfig({
  NODE_ENV: 'test',
  JWT_SECRET: 'a unit-test secret of at least 32 bytes',
  SECRETS_KEY: '0'.repeat(64),
  PUBLIC_URL: 'https://platform.test',
});
const IDP = 'https://idp.acme.test';
const AFTER = 'https://app.acme.test/after';
const sp = serviceProviderFor(config.publicUrl, 'acme');

runTransactionsInline();
Logger.overrideLogger(false);

/** The organizations module's feature check, by the tiers' real features: SAML is enterprise only. */
class TierFeatures {
  constructor(private readonly organizations: OrganizationRepository) {}

  async assertFeature(organizationId: string, feature: string): Promise<void> {
    const organization = await this.organizations.findById(organizationId);
    if (!organization || !TIER_FEATURES[organization.tier].includes(feature)) {
      throw new DomainError('FEATURE_NOT_AVAILABLE', `'${feature}' needs a higher tier`);
    }
  }
}

/** The users module's create as sign-in uses it: a seat within the organization's quota, then the user. */
class QuotaCheckingUsers {
  constructor(
    private readonly users: InMemoryUserRepository,
    private readonly organizations: OrganizationRepository,
  ) {}

  async create(organizationId: string, input: NewUser): Promise<User> {
    const quota = (await this.organizations.findById(organizationId))?.seatQuota ?? null;
    if (quota !== null && (await this.users.countInOrganization(organizationId)) >= quota) {
      throw new DomainError('SEAT_LIMIT_REACHED', `This organization has used its ${quota} seats`);
    }
    const { email, role, firstName, lastName } = input;
    const user = User.create({ organizationId, email, role, firstName, lastName, passwordHash: null });
    await this.users.insert(user);
    return user;
  }
}

/** What node-saml hands over for a response it validated: the attributes, and the XML the addressing is read from. */
function assertion(
  attributes: Record<string, unknown>,
  overrides: { issuer?: string; recipient?: string; destination?: string; nameID?: string } = {},
): Profile {
  const recipient = overrides.recipient ?? sp.acsUrl;
  const destination = overrides.destination ?? sp.acsUrl;
  return {
    issuer: overrides.issuer ?? IDP,
    // node-saml sets it from the Response it validated: this answers an AuthnRequest of ours.
    inResponseTo: '_request',
    nameID: overrides.nameID ?? 'name-id@acme.test',
    nameIDFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    attributes,
    getAssertionXml: () =>
      `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><saml:Subject><saml:SubjectConfirmation>` +
      `<saml:SubjectConfirmationData Recipient="${recipient}"/></saml:SubjectConfirmation></saml:Subject></saml:Assertion>`,
    getSamlResponseXml: () => `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" Destination="${destination}"/>`,
  };
}

describe('SamlSignInService', () => {
  let users: InMemoryUserRepository;
  let organizations: InMemoryOrganizationRepository;
  let store: InMemorySamlStore;
  let service: SamlSignInService;
  let acme: Organization;
  let settings: SamlSettings;

  beforeEach(async () => {
    users = new InMemoryUserRepository();
    organizations = new InMemoryOrganizationRepository();
    store = new InMemorySamlStore();
    service = new SamlSignInService(
      config,
      store,
      organizations,
      new TierFeatures(organizations) as unknown as SubscriptionService,
      { live: async () => [] } as unknown as SamlSpKeysService,
      new SsoAccounts(users, new QuotaCheckingUsers(users, organizations) as unknown as UsersService, new RecordingAuditTrail()),
      new LoginCodes(store, users),
    );
    acme = organizations.add(Organization.create({ slug: 'acme', name: 'Acme', tier: 'enterprise' }));
    settings = {
      idpEntityId: IDP,
      idpSsoUrl: `${IDP}/sso`,
      idpSloUrl: null,
      idpCertificates: ['(not read by these specs)'],
      attributes: DEFAULT_ATTRIBUTES,
      roleMappings: [
        { group: 'platform-admins', role: 'admin' },
        { group: 'engineers', role: 'member' },
      ],
      defaultRole: 'viewer',
      wantResponseSigned: false,
      wantAssertionsEncrypted: false,
      allowIdpInitiated: false,
      allowedRedirects: [AFTER],
      enabled: true,
      enforced: false,
    };
    await store.saveSettings(acme.id, settings);
  });

  afterEach(() => jest.useRealTimers());

  /**
   * The request-id cache of an ACS request whose response answers an AuthnRequest we sent:
   * the login request remembered the id, this request used it (as node-saml does).
   */
  async function answered(organizationId = acme.id): Promise<{ cache: RequestIdCache; requestId: string }> {
    const requestId = `_${randomUUID()}`;
    await new RequestIdCache(store, organizationId).saveAsync(requestId, new Date().toISOString());
    const cache = new RequestIdCache(store, organizationId);
    await cache.removeAsync(requestId);
    return { cache, requestId };
  }

  async function signIn(profile: Profile | null, slug = 'acme'): Promise<User> {
    return (await service.signIn(slug, profile, (await answered()).cache)).user;
  }

  function addUser(email: string, patch: { role?: User['role']; isOperator?: boolean; organizationId?: string } = {}): User {
    return users.add(
      User.create({
        organizationId: patch.organizationId ?? acme.id,
        email,
        passwordHash: 'hashed:password',
        role: patch.role ?? 'member',
        isOperator: patch.isOperator,
      }),
    );
  }

  describe('signIn', () => {
    it('provisions a new user from the assertion, without a password', async () => {
      const user = await signIn(
        assertion({ email: 'New.User@Acme.test', firstName: ' Ada ', lastName: 'Lovelace', groups: ['engineers'] }),
      );
      expect(user).toMatchObject({
        organizationId: acme.id,
        email: 'new.user@acme.test',
        role: 'member',
        firstName: 'Ada',
        lastName: 'Lovelace',
      });
      const stored = await users.findByEmail('new.user@acme.test');
      expect(stored).toMatchObject({ id: user.id, organizationId: acme.id, role: 'member', passwordHash: null });
    });

    it.each<[string, unknown, User['role']]>([
      ['an admin group', ['platform-admins'], 'admin'],
      ['the first mapping of the settings, whatever the order of the groups', ['engineers', 'platform-admins'], 'admin'],
      ['a member group', ['engineers'], 'member'],
      ['one group given as a single value', 'engineers', 'member'],
      ['no mapped group (the default role)', ['sales'], 'viewer'],
      ['no groups (the default role)', undefined, 'viewer'],
    ])('gives the role of %s', async (_, groups, role) => {
      const user = await signIn(assertion({ email: 'someone@acme.test', groups }));
      expect(user.role).toBe(role);
      expect((await users.findByEmail('someone@acme.test'))?.role).toBe(role);
    });

    it('takes the email from the NameID when the assertion has no email attribute', async () => {
      const user = await signIn(assertion({ groups: [] }, { nameID: 'From.NameID@acme.test' }));
      expect(user.email).toBe('from.nameid@acme.test');
    });

    it.each(['not an email', `${'x'.repeat(320)}@acme.test`])('refuses the unusable email %p, creating nobody', async (email) => {
      await expect(signIn(assertion({ email }))).rejects.toMatchObject({ code: 'SAML_INVALID' });
      expect(users.all()).toHaveLength(0);
    });

    it('signs an existing user in, with the role and names the IdP asserts now', async () => {
      const existing = addUser('ada@acme.test', { role: 'member' });
      const user = await signIn(assertion({ email: 'ada@acme.test', firstName: 'Ada', groups: ['platform-admins'] }));
      expect(user).toMatchObject({ id: existing.id, role: 'admin', firstName: 'Ada' });
      const stored = await users.findById(acme.id, existing.id);
      expect(stored).toMatchObject({ role: 'admin', firstName: 'Ada', passwordHash: 'hashed:password' });
      // A new role ends the sessions the user had.
      expect(stored!.credentialsVersion).toBeGreaterThan(existing.credentialsVersion);
      expect(users.all()).toHaveLength(1);
    });

    it.each<[string, () => Promise<User>]>([
      [
        'a disabled user',
        async () => {
          const user = addUser('ada@acme.test');
          user.change({ disabled: true });
          await users.update(user);
          return user;
        },
      ],
      ['an instance operator (password only)', async () => addUser('ada@acme.test', { role: 'admin', isOperator: true })],
      [
        "another organization's user",
        async () => {
          const other = organizations.add(Organization.create({ slug: 'other', name: 'Other', tier: 'enterprise' }));
          return addUser('ada@acme.test', { organizationId: other.id });
        },
      ],
    ])('refuses %s with one answer, changing nothing', async (_, arrange) => {
      const user = await arrange();
      const before = (await users.findByEmail('ada@acme.test'))!.toProps();
      await expect(signIn(assertion({ email: 'ada@acme.test', groups: ['platform-admins'] }))).rejects.toMatchObject({
        code: 'SAML_INVALID',
        message: 'This account cannot sign in here',
      });
      expect((await users.findByEmail('ada@acme.test'))!.toProps()).toEqual(before);
      expect(users.all().map((u) => u.id)).toEqual([user.id]);
    });

    it("refuses a new user past the organization's seat quota, creating nobody", async () => {
      acme.setSeatQuota(1);
      await organizations.update(acme);
      addUser('first@acme.test');
      await expect(signIn(assertion({ email: 'second@acme.test' }))).rejects.toMatchObject({ code: 'SEAT_LIMIT_REACHED' });
      expect(await users.findByEmail('second@acme.test')).toBeNull();
      // Those who have a seat still sign in.
      await expect(signIn(assertion({ email: 'first@acme.test' }))).resolves.toMatchObject({ email: 'first@acme.test' });
    });

    it('refuses a response whose AuthnRequest another request used first (a replay)', async () => {
      const { cache, requestId } = await answered();
      const replay = new RequestIdCache(store, acme.id);
      expect(await replay.removeAsync(requestId)).toBeNull();
      await expect(service.signIn('acme', assertion({ email: 'ada@acme.test' }), replay)).rejects.toMatchObject({
        code: 'SAML_INVALID',
        message: 'This response was already used',
      });
      await expect(service.signIn('acme', assertion({ email: 'ada@acme.test' }), cache)).resolves.toMatchObject({
        user: { email: 'ada@acme.test' },
      });
    });

    it.each([
      ['another issuer', { issuer: 'https://idp.evil.test' }],
      ['another recipient', { recipient: 'https://platform.test/api/auth/saml/other/acs' }],
      ['another destination', { destination: 'https://platform.test/api/auth/saml/other/acs' }],
    ])('refuses an assertion with %s', async (_, overrides) => {
      await expect(signIn(assertion({ email: 'ada@acme.test' }, overrides))).rejects.toMatchObject({ code: 'SAML_INVALID' });
      expect(users.all()).toHaveLength(0);
    });

    it('refuses a response without an assertion', async () => {
      await expect(signIn(null)).rejects.toMatchObject({ code: 'SAML_INVALID' });
    });

    it('is not there for an unknown organization or disabled settings, and is refused below enterprise', async () => {
      await expect(signIn(assertion({ email: 'ada@acme.test' }), 'nobody')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await store.saveSettings(acme.id, { ...settings, enabled: false });
      await expect(signIn(assertion({ email: 'ada@acme.test' }))).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await store.saveSettings(acme.id, settings);
      acme.assignTier('team');
      await organizations.update(acme);
      await expect(signIn(assertion({ email: 'ada@acme.test' }))).rejects.toMatchObject({ code: 'FEATURE_NOT_AVAILABLE' });
    });
  });

  describe('one-time code', () => {
    async function codeFor(user: User): Promise<string> {
      const target = new URL(await service.redirectWithCode('acme', { user, familyId: randomUUID() }, `${AFTER}/page?x=1`));
      expect(`${target.origin}${target.pathname}`).toBe(`${AFTER}/page`);
      expect(target.searchParams.get('x')).toBe('1');
      return target.searchParams.get('code')!;
    }

    it('sends the browser back with a code that is exchanged once for the user', async () => {
      const user = addUser('ada@acme.test');
      const code = await codeFor(user);
      await expect(service.exchange(code)).resolves.toMatchObject({ user: { id: user.id } });
      await expect(service.exchange(code)).rejects.toMatchObject({ code: 'SAML_INVALID' });
    });

    it('refuses an expired code', async () => {
      const code = await codeFor(addUser('ada@acme.test'));
      jest.useFakeTimers({
        now: Date.now() + 61_000,
        doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'setTimeout', 'setInterval'],
      });
      await expect(service.exchange(code)).rejects.toMatchObject({ code: 'SAML_INVALID' });
    });

    it('refuses an unknown code, and the code of a user disabled since', async () => {
      await expect(service.exchange('not-a-code')).rejects.toMatchObject({ code: 'SAML_INVALID' });
      const user = addUser('ada@acme.test');
      const code = await codeFor(user);
      user.change({ disabled: true });
      await users.update(user);
      await expect(service.exchange(code)).rejects.toMatchObject({ code: 'SAML_INVALID' });
    });

    it.each(['https://evil.test/after', 'https://app.acme.test.evil.test/after', 'https://app.acme.test/elsewhere', 'not a url'])(
      'refuses to send the browser to %p',
      async (relayState) => {
        const user = addUser('ada@acme.test');
        await expect(service.redirectWithCode('acme', { user, familyId: randomUUID() }, relayState)).rejects.toMatchObject({
          code: 'VALIDATION_FAILED',
        });
      },
    );
  });

  describe('loginUrl', () => {
    it('sends the browser to the IdP with an AuthnRequest whose id it remembers', async () => {
      const url = new URL(await service.loginUrl('acme', AFTER));
      expect(`${url.origin}${url.pathname}`).toBe(`${IDP}/sso`);
      expect(url.searchParams.get('RelayState')).toBe(AFTER);
      const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
      expect(request).toContain(`AssertionConsumerServiceURL="${sp.acsUrl}"`);
      const id = /\sID="([^"]+)"/.exec(request)![1];
      expect(await store.pendingRequest(acme.id, id)).toBeInstanceOf(Date);
    });

    it('refuses a redirect outside the allowed ones', async () => {
      await expect(service.loginUrl('acme', 'https://evil.test/')).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    });
  });
});
