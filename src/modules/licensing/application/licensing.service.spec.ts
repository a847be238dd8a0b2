import { RecordingAuditTrail } from '../../../shared/audit/audit-trail.fake';
import { createPrivateKey } from 'node:crypto';
import { inlineTransactions } from '../../../../test/support/inline-transactions';
import { Logger } from '@nestjs/common';
import { SignJWT } from 'jose';
import { AppConfig } from '../../../config/app-config';
import { ConfigError } from '../../../config/environment';
import { Signals } from '../../../queue/signals';
import { DomainError } from '../../../shared/errors/domain-error';
import { LicenseClaims } from '../domain/license';
import { LicenseRepository, StoredLicense } from '../domain/license.repository';
import { SeatQuotas } from '../domain/seat-quotas';
import { TRIAL_DAYS, TrialPeriod, TrialRepository } from '../domain/trial';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { allows } from '../../../shared/outbound/address-policy';
import { lowerTier, TIER_FEATURES, TIER_RATE_LIMITS, tierIncluding } from '../domain/tiers';
import { generateLicenseKeyPair, issueLicense, LicenseGrant } from './license-issuer';
import { keyRing, LicenseVerifier, verifyLicense } from './license-verifier';
import { LICENSE_CHANGED, LicensingService } from './licensing.service';

class InMemoryLicenseRepository extends LicenseRepository {
  stored: StoredLicense | null = null;
  async find() {
    return this.stored && { ...this.stored };
  }
  async replace(license: StoredLicense) {
    this.stored = { ...license };
  }
  async remove() {
    const had = this.stored !== null;
    this.stored = null;
    return had;
  }
}

class InMemoryTrialRepository extends TrialRepository {
  startedAt: Date | null = null;
  async start(at: Date) {
    this.startedAt ??= at;
    return this.startedAt;
  }
}

class InMemorySeatQuotas extends SeatQuotas {
  readonly quotas = new Map<string, number | null>();
  async quotaOf(organizationId: string) {
    return this.quotas.get(organizationId) ?? null;
  }
}

/** Signals of one process: what was published, and delivered to this process's handlers. */
function localSignals() {
  const handlers = new Map<string, Array<(id: string) => void>>();
  const published: Array<[string, string]> = [];
  const signals = {
    on: (topic: string, handler: (id: string) => void) => handlers.set(topic, [...(handlers.get(topic) ?? []), handler]),
    publish: (topic: string, id: string) => {
      published.push([topic, id]);
      for (const handler of handlers.get(topic) ?? []) handler(id);
    },
  };
  return { signals: signals as unknown as Signals, published };
}

const transactions = inlineTransactions();

const vendor = generateLicenseKeyPair();
const grant = (extra: Partial<LicenseGrant> = {}): LicenseGrant => ({ customer: 'Acme', tier: 'team', seats: 50, days: 30, ...extra });
const DAY = 86_400_000;

/**
 * A service whose vendor key ring is `vendorKeys` (default: the throwaway `vendor` of these
 * specs) plus `environmentKeys`, as LICENSE_PUBLIC_KEYS would add them.
 */
function setup(options: { vendorKeys?: readonly string[]; environmentKeys?: string[]; licenseKey?: string; trial?: boolean } = {}) {
  const environmentKeys = options.environmentKeys ?? [];
  const config = {
    licensePublicKeys: environmentKeys,
    licenseKey: options.licenseKey,
    trial: options.trial ?? false,
    outboundAllowList: '',
  } as AppConfig;
  const ring = keyRing(options.vendorKeys ?? [vendor.publicKeyBase64], environmentKeys);
  const verifier = { verify: (key: string) => verifyLicense(key, ring) } as LicenseVerifier;
  const licenses = new InMemoryLicenseRepository();
  const quotas = new InMemorySeatQuotas();
  const { signals, published } = localSignals();
  const trials = new InMemoryTrialRepository();
  const outbound = new OutboundPolicy(config);
  const service = new LicensingService(config, verifier, licenses, quotas, signals, trials, outbound, new RecordingAuditTrail());
  return { service, licenses, quotas, published, trials, outbound };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(error)}`);
  return error.code;
}

describe('LicensingService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  describe('without a license', () => {
    it('limits every organization to starter and sets no seat limit', async () => {
      const { service } = setup();
      const state = await service.state();
      expect(state).toMatchObject({ status: 'none', valid: false, maxTier: 'starter', seats: null, maxRateLimitPerMinute: null });
      expect(state.effectiveTier('enterprise')).toBe('starter');
      expect(state.warnings()).toEqual([expect.stringContaining('No license is installed')]);
    });

    it('refuses to remove what is not there', async () => {
      expect(await codeOf(setup().service.remove())).toBe('LICENSE_INVALID');
    });
  });

  describe('install', () => {
    it('stores a valid key, answers its claims and tells every process', async () => {
      const { service, licenses, published } = setup();
      const key = await issueLicense(grant({ tier: 'team', seats: 50, maxRateLimitPerMinute: 900 }), vendor.privateKeyPem);
      const claims = await service.install(key, { userId: 'operator-1', organizationId: 'operators' });
      expect(claims).toMatchObject({ sub: 'Acme', tier: 'team', seats: 50, features: ['webhooks', 'audit.log'], maxRateLimitPerMinute: 900 });
      expect(licenses.stored).toEqual({ key, installedBy: 'operator-1', installedAt: expect.any(Date) });
      expect(published).toEqual([[LICENSE_CHANGED, 'installation']]);
      const state = await service.state();
      expect(state).toMatchObject({ status: 'valid', maxTier: 'team', seats: 50, maxRateLimitPerMinute: 900 });
      expect(state.warnings()).toEqual([]);
    });

    it('replaces the license before it, and the cached state with it', async () => {
      const { service, licenses } = setup();
      await service.install(await issueLicense(grant({ tier: 'team', seats: 50 }), vendor.privateKeyPem), null);
      expect((await service.state()).seats).toBe(50);
      const second = await issueLicense(grant({ tier: 'enterprise', seats: 80 }), vendor.privateKeyPem);
      await service.install(second, null);
      expect(licenses.stored?.key).toBe(second);
      expect(await service.state()).toMatchObject({ maxTier: 'enterprise', seats: 80 });
    });

    it('runs the listeners in the transaction that stores the row, with the claims', async () => {
      const { service } = setup();
      const seen: Array<{ claims: LicenseClaims; inTransaction: boolean }> = [];
      service.onInstalled(async (claims) => {
        seen.push({ claims, inTransaction: transactions.isTransactionActive() });
      });
      await service.install(await issueLicense(grant({ tier: 'enterprise' }), vendor.privateKeyPem), null);
      expect(seen).toEqual([{ claims: expect.objectContaining({ tier: 'enterprise' }), inTransaction: true }]);
    });

    it.each<[string, () => Promise<string>]>([
      ['a key of another vendor', () => issueLicense(grant(), generateLicenseKeyPair().privateKeyPem)],
      ['no compact JWS', async () => 'this-is-not.a-license.key-at-all'],
      [
        'a tampered key',
        async () => {
          const [header, payload, signature] = (await issueLicense(grant(), vendor.privateKeyPem)).split('.');
          const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as object;
          return [header, Buffer.from(JSON.stringify({ ...claims, seats: 9_999 })).toString('base64url'), signature].join('.');
        },
      ],
      [
        'a key signed with HS256',
        () => new SignJWT({ tier: 'team' }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(32))),
      ],
      [
        'a key without seats',
        () =>
          new SignJWT({ tier: 'team', features: [], maxRateLimitPerMinute: 10 })
            .setProtectedHeader({ alg: 'EdDSA' })
            .setSubject('Acme')
            .setIssuedAt()
            .setExpirationTime('1d')
            .sign(createPrivateKey(vendor.privateKeyPem)),
      ],
      [
        'an unknown tier',
        () =>
          new SignJWT({ tier: 'gold', seats: 5, features: [], maxRateLimitPerMinute: 10 })
            .setProtectedHeader({ alg: 'EdDSA' })
            .setSubject('Acme')
            .setIssuedAt()
            .setExpirationTime('1d')
            .sign(createPrivateKey(vendor.privateKeyPem)),
      ],
    ])('refuses %s with LICENSE_INVALID and keeps the license before it', async (_, makeKey) => {
      const { service, licenses, published } = setup();
      const before = await issueLicense(grant(), vendor.privateKeyPem);
      await service.install(before, null);
      let listened = false;
      service.onInstalled(async () => {
        listened = true;
      });
      expect(await codeOf(service.install(await makeKey(), null))).toBe('LICENSE_INVALID');
      expect(licenses.stored?.key).toBe(before);
      expect(listened).toBe(false);
      expect(published).toHaveLength(1);
    });

    it("refuses a license no key of the release verifies when LICENSE_PUBLIC_KEYS adds none (the service's own verifier)", async () => {
      const config = { licensePublicKeys: [] as string[] } as AppConfig;
      const key = await issueLicense(grant(), vendor.privateKeyPem);
      await expect(new LicenseVerifier(config).verify(key)).rejects.toMatchObject({
        code: 'LICENSE_INVALID',
        message: expect.stringContaining("does not match the vendor's keys"),
      });
      const added = { licensePublicKeys: [vendor.publicKeyBase64] } as AppConfig;
      expect(await new LicenseVerifier(added).verify(key)).toMatchObject({ verifiedBy: 'environment', claims: { sub: 'Acme' } });
    });
  });

  describe('which key verified the license', () => {
    it("marks a license the vendor's keys verify as the vendor's, without a warning", async () => {
      const { service } = setup();
      await service.install(await issueLicense(grant(), vendor.privateKeyPem), null);
      const state = await service.state();
      expect(state.license?.verifiedBy).toBe('vendor');
      expect(state.warnings()).toEqual([]);
    });

    it('marks a license a LICENSE_PUBLIC_KEYS key verifies as from the environment, with a warning', async () => {
      const developer = generateLicenseKeyPair();
      const { service } = setup({ environmentKeys: [developer.publicKeyBase64] });
      await service.install(await issueLicense(grant(), developer.privateKeyPem), null);
      const state = await service.state();
      expect(state.license?.verifiedBy).toBe('environment');
      expect(state.warnings()).toEqual([expect.stringContaining("not against the vendor's keys")]);
    });

    it("counts a vendor key repeated in LICENSE_PUBLIC_KEYS as the vendor's", async () => {
      const { service } = setup({ environmentKeys: [vendor.publicKeyBase64] });
      await service.install(await issueLicense(grant(), vendor.privateKeyPem), null);
      expect((await service.state()).license?.verifiedBy).toBe('vendor');
    });

    it('says plainly in the boot log that a key from the environment verified the license', async () => {
      const developer = generateLicenseKeyPair();
      const licenseKey = await issueLicense(grant(), developer.privateKeyPem);
      const { service } = setup({ environmentKeys: [developer.publicKeyBase64], licenseKey });
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        await service.applyConfiguredKey();
        expect(warn).toHaveBeenCalledWith(
          expect.stringMatching(/verified against a key from LICENSE_PUBLIC_KEYS \(the environment\), NOT the vendor's/),
        );
      } finally {
        warn.mockRestore();
      }
    });
  });

  it('removes the license: starter again', async () => {
    const { service, licenses, published } = setup();
    await service.install(await issueLicense(grant({ tier: 'enterprise' }), vendor.privateKeyPem), null);
    await service.remove();
    expect(licenses.stored).toBeNull();
    expect(published).toHaveLength(2);
    expect(await service.state()).toMatchObject({ status: 'none', maxTier: 'starter' });
  });

  it('keeps an expired license and shows it, granting starter and no seat limit', async () => {
    const { service } = setup();
    const lastYear = new Date(Date.now() - 400 * DAY);
    const claims = await service.install(await issueLicense(grant({ tier: 'enterprise', days: 30 }), vendor.privateKeyPem, lastYear), null);
    expect(claims.tier).toBe('enterprise');
    const state = await service.state();
    expect(state).toMatchObject({ status: 'expired', valid: false, maxTier: 'starter', seats: null, maxRateLimitPerMinute: null });
    expect(state.license?.claims.tier).toBe('enterprise');
    expect(state.effectiveTier('team')).toBe('starter');
    expect(state.warnings()).toEqual([expect.stringContaining('expired')]);
  });

  it('treats a stored license that no configured key verifies (a rotated vendor key) as none', async () => {
    const { service, licenses } = setup();
    licenses.stored = {
      key: await issueLicense(grant(), generateLicenseKeyPair().privateKeyPem),
      installedBy: null,
      installedAt: new Date(),
    };
    expect((await service.state()).status).toBe('none');
  });

  describe('applyConfiguredKey', () => {
    it('installs LICENSE_KEY once', async () => {
      const licenseKey = await issueLicense(grant(), vendor.privateKeyPem);
      const { service, licenses, published } = setup({ licenseKey });
      await service.applyConfiguredKey();
      await service.applyConfiguredKey();
      expect(licenses.stored).toMatchObject({ key: licenseKey, installedBy: null });
      expect(published).toHaveLength(1);
    });

    it('turns a key it refuses into a configuration error', async () => {
      const { service } = setup({ licenseKey: await issueLicense(grant(), generateLicenseKeyPair().privateKeyPem) });
      await expect(service.applyConfiguredKey()).rejects.toThrow(ConfigError);
    });
  });

  describe('trial (TRIAL=true)', () => {
    const loopback = { hostname: '127.0.0.1', address: '127.0.0.1' };

    it('records its start once and gives every organization enterprise, with loopback targets, for 30 days', async () => {
      const { service, trials, outbound } = setup({ trial: true });
      expect(allows(outbound.allowList, loopback)).toBe(false);
      await service.applyConfiguredKey();
      const first = trials.startedAt!;
      const state = await service.state();
      expect(state).toMatchObject({ status: 'none', trialActive: true, maxTier: 'enterprise', seats: null, maxRateLimitPerMinute: 10_000 });
      expect(state.effectiveTier('starter')).toBe('enterprise');
      expect(state.trial).toMatchObject({ startedAt: first, active: true, daysLeft: TRIAL_DAYS });
      expect(state.trial!.endsAt.getTime() - first.getTime()).toBe(TRIAL_DAYS * DAY);
      expect(state.warnings()).toEqual([expect.stringMatching(/^Trial mode \(TRIAL=true\).*\(30 days left\)$/)]);
      expect(allows(outbound.allowList, loopback)).toBe(true);
      expect(allows(outbound.allowList, { hostname: 'localhost', address: 'localhost' })).toBe(true);
      expect(allows(outbound.allowList, { hostname: '10.1.2.3', address: '10.1.2.3' })).toBe(true);
      // Not the cloud metadata address, nor link-local.
      expect(allows(outbound.allowList, { hostname: 'meta.test', address: '169.254.169.254' })).toBe(false);
      await service.applyConfiguredKey();
      expect(trials.startedAt).toBe(first);
    });

    it("falls back to the license's tier and blocks loopback again once the 30 days are over, and says so", async () => {
      const { service, trials, outbound } = setup({ trial: true });
      trials.startedAt = new Date(Date.now() - 31 * DAY);
      await service.install(await issueLicense(grant({ tier: 'team' }), vendor.privateKeyPem), null);
      const state = await service.state();
      expect(state).toMatchObject({ trialActive: false, maxTier: 'team' });
      expect(state.trial).toMatchObject({ active: false, daysLeft: 0 });
      expect(state.effectiveTier('enterprise')).toBe('team');
      expect(state.warnings()).toEqual([expect.stringMatching(/^The trial ended on .*OUTBOUND_ALLOWLIST/)]);
      expect(allows(outbound.allowList, loopback)).toBe(false);
    });

    it('counts the days left from now, a started day as one', () => {
      const now = new Date('2026-12-01T12:00:00Z');
      expect(new TrialPeriod(new Date('2026-11-30T12:00:00Z'), now).daysLeft).toBe(29);
      expect(new TrialPeriod(new Date('2026-11-01T13:00:00Z'), now)).toMatchObject({ active: true, daysLeft: 1 });
      expect(new TrialPeriod(new Date('2026-11-01T12:00:00Z'), now)).toMatchObject({ active: false, daysLeft: 0 });
    });

    it('is not read without TRIAL', async () => {
      const { service, trials } = setup();
      await service.applyConfiguredKey();
      expect(trials.startedAt).toBeNull();
      expect((await service.state()).trial).toBeNull();
    });
  });

  describe('tiers', () => {
    it("gives an organization its assigned tier up to the license's, with that tier's features and limits", async () => {
      const { service } = setup();
      await service.install(await issueLicense(grant({ tier: 'team' }), vendor.privateKeyPem), null);
      const state = await service.state();
      expect(state.effectiveTier('starter')).toBe('starter');
      expect(state.effectiveTier('team')).toBe('team');
      expect(state.effectiveTier('enterprise')).toBe('team');
      expect(TIER_FEATURES[state.effectiveTier('enterprise')]).toEqual(['webhooks', 'audit.log']);
      expect(TIER_RATE_LIMITS).toEqual({ starter: 100, team: 500, enterprise: 2000 });
    });

    it('names the lowest tier that includes a feature', () => {
      expect(tierIncluding('webhooks')).toBe('team');
      expect(tierIncluding('sso.saml')).toBe('enterprise');
      expect(tierIncluding('time-travel')).toBeUndefined();
      expect(lowerTier('enterprise', 'starter')).toBe('starter');
    });

    it("issues a license with its tier's features unless others are granted", async () => {
      const { service } = setup();
      expect((await service.install(await issueLicense(grant({ tier: 'enterprise' }), vendor.privateKeyPem), null)).features).toEqual(
        TIER_FEATURES.enterprise,
      );
      expect((await service.install(await issueLicense(grant({ features: ['x'] }), vendor.privateKeyPem), null)).features).toEqual(['x']);
    });
  });

  describe('seatLimits', () => {
    it("answers the license's seats and the organization's own quota", async () => {
      const { service, quotas } = setup();
      await service.install(await issueLicense(grant({ seats: 50 }), vendor.privateKeyPem), null);
      quotas.quotas.set('org-a', 5);
      expect(await service.seatLimits('org-a')).toEqual({ installation: 50, organization: 5 });
      expect(await service.seatLimits('org-b')).toEqual({ installation: 50, organization: null });
    });

    it('sets no installation limit without a valid license, but keeps the quota', async () => {
      const { service, quotas } = setup();
      quotas.quotas.set('org-a', 3);
      expect(await service.seatLimits('org-a')).toEqual({ installation: null, organization: 3 });
      await service.install(await issueLicense(grant({ seats: 10 }), vendor.privateKeyPem, new Date(Date.now() - 60 * DAY)), null);
      expect(await service.seatLimits('org-a')).toEqual({ installation: null, organization: 3 });
    });
  });
});
