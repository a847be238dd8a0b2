import { AuditTrail } from '../../../shared/audit/audit-trail';
import { Transactional } from '@nestjs-cls/transactional';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { ConfigError } from '../../../config/environment';
import { Signals } from '../../../queue/signals';
import { DomainError } from '../../../shared/errors/domain-error';
import { SharedReads } from '../../../shared/caching/shared-reads';
import { OutboundPolicy } from '../../../shared/outbound/outbound-policy';
import { InstalledLicense, LicenseClaims, LicenseState } from '../domain/license';
import { LicenseRepository, StoredLicense } from '../domain/license.repository';
import { SeatLimits, SeatQuotas } from '../domain/seat-quotas';
import { TrialPeriod, TrialRepository } from '../domain/trial';
import { LicenseVerifier } from './license-verifier';

/** Signal topic: the license was installed or removed (cached limits re-read it). */
export const LICENSE_CHANGED = 'license.changed';
/** How long a process trusts its copy of the license; changes elsewhere reach it by signal sooner. */
const CACHE_MS = 30_000;

type InstalledListener = (claims: LicenseClaims) => Promise<void>;

/** What is read together and cached: the license, and the trial's start with TRIAL=true. */
interface Loaded {
  license: InstalledLicense | null;
  trialStartedAt: Date | null;
}

/**
 * The installation's license: stored in one row, verified on every install and load, and
 * cached per process (a change anywhere is signalled to every process). With TRIAL=true, also
 * the trial: its start recorded once per installation, the trial's tier for every organization
 * and loopback and private outbound targets for its 30 days.
 */
@Injectable()
export class LicensingService {
  private readonly logger = new Logger('Licensing');
  private readonly cached = new SharedReads<'installation', Loaded>(CACHE_MS, () => this.read());
  private readonly installedListeners: InstalledListener[] = [];
  /** When the trial ends, as last read (TRIAL=true): the SSRF guard asks synchronously. */
  private trialEndsAt: number | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly verifier: LicenseVerifier,
    private readonly licenses: LicenseRepository,
    private readonly seatQuotas: SeatQuotas,
    private readonly signals: Signals,
    private readonly trials: TrialRepository,
    outbound: OutboundPolicy,
    private readonly audit: AuditTrail,
  ) {
    this.signals.on(LICENSE_CHANGED, () => this.cached.clear());
    outbound.allowInternalWhile(() => this.trialEndsAt !== null && Date.now() < this.trialEndsAt);
  }

  /**
   * Installs LICENSE_KEY unless it is the one installed; run by the first-start bootstrap of
   * every process. With TRIAL=true, records the trial's start unless an earlier start is recorded.
   * Then says in the log which license is in force and, plainly, when a key from the environment
   * rather than the vendor's verified it; and the trial, active or ended (a warning).
   */
  async applyConfiguredKey(): Promise<void> {
    const key = this.config.licenseKey;
    if (key && (await this.load()).license?.key !== key) {
      let claims: LicenseClaims;
      try {
        claims = await this.install(key, null);
      } catch (error) {
        // A configuration error like any other: one line naming the variable, and exit 1.
        if (error instanceof DomainError) throw new ConfigError(`LICENSE_KEY is not a license this installation accepts: ${error.message}`);
        throw error;
      }
      this.logger.log(`License from LICENSE_KEY installed: ${claims.sub}, ${claims.tier}, ${claims.seats} seats`);
    }
    // Read, not loaded through the cache: the report leaves the per-process copy as it was.
    const { license, trialStartedAt } = await this.read();
    const state = new LicenseState(license, new Date(), trialStartedAt && new TrialPeriod(trialStartedAt));
    // Without a license the trial's line says what organizations get; "limited to starter" would not be true.
    if (state.license || !state.trialActive) this.logLicenseInForce(state);
    if (state.trial?.active) this.logger.log(state.trial.describe());
    else if (state.trial) this.logger.warn(state.trial.describe());
  }

  /** Organizations register here to be raised to the licensed tier (the single-organization case). */
  onInstalled(listener: InstalledListener): void {
    this.installedListeners.push(listener);
  }

  async state(): Promise<LicenseState> {
    const { license, trialStartedAt } = await this.load();
    const now = new Date();
    return new LicenseState(license, now, trialStartedAt && new TrialPeriod(trialStartedAt, now));
  }

  /** `installedBy`: the operator, whose organization's audit log records it; null at boot (LICENSE_KEY). */
  async install(key: string, installedBy: { userId: string; organizationId: string } | null): Promise<LicenseClaims> {
    const { claims } = await this.verifier.verify(key);
    await this.store({ key, installedBy: installedBy?.userId ?? null, installedAt: new Date() }, claims, installedBy?.organizationId ?? null);
    // After the transaction: the other processes re-read the row when they hear of it.
    this.changed();
    return claims;
  }

  async remove(): Promise<void> {
    if (!(await this.licenses.remove())) throw new DomainError('LICENSE_INVALID', 'No license is installed');
    this.changed();
  }

  /**
   * What limits the users of an organization: the license's seats (none without a valid
   * license) and the organization's own quota. The users module counts and checks.
   */
  async seatLimits(organizationId: string): Promise<SeatLimits> {
    const installation = (await this.state()).seats;
    return { installation, organization: await this.seatQuotas.quotaOf(organizationId) };
  }

  /** The row and what the listeners change with it, together or not at all. */
  @Transactional()
  private async store(license: StoredLicense, claims: LicenseClaims, organizationId: string | null): Promise<void> {
    await this.licenses.replace(license);
    for (const listener of this.installedListeners) await listener(claims);
    if (organizationId) {
      await this.audit.record({
        organizationId,
        action: 'license.installed',
        target: { type: 'license', id: null, name: claims.sub },
        changes: { after: { customer: claims.sub, tier: claims.tier, seats: claims.seats, expiresAt: new Date(claims.exp * 1000).toISOString() } },
      });
    }
  }

  private load(): Promise<Loaded> {
    return this.cached.get('installation');
  }

  private async read(): Promise<Loaded> {
    const license = await this.readLicense();
    const trialStartedAt = this.config.trial ? await this.trials.start(new Date()) : null;
    this.trialEndsAt = trialStartedAt && new TrialPeriod(trialStartedAt).endsAt.getTime();
    return { license, trialStartedAt };
  }

  private async readLicense(): Promise<InstalledLicense | null> {
    const stored = await this.licenses.find();
    if (!stored) return null;
    try {
      return { key: stored.key, ...(await this.verifier.verify(stored.key)), installedAt: stored.installedAt };
    } catch (error) {
      // A stored license no configured key verifies (the vendor key was rotated away): none.
      this.logger.warn(`The stored license is not valid: ${(error as Error).message}`);
      return null;
    }
  }

  /** One line at boot: the license in force, and a warning when the vendor's keys did not verify it. */
  private logLicenseInForce(state: LicenseState): void {
    const license = state.license;
    if (!license) return this.logger.log('No license is installed: every organization is limited to starter');
    const { sub, tier, seats, exp } = license.claims;
    const until = `${state.status === 'expired' ? 'expired on' : 'valid until'} ${new Date(exp * 1000).toISOString()}`;
    if (license.verifiedBy === 'vendor') {
      return this.logger.log(`License: ${sub}, ${tier}, ${seats} seats, ${until}; verified against the vendor's key`);
    }
    this.logger.warn(
      `License: ${sub}, ${tier}, ${seats} seats, ${until}; verified against a key from LICENSE_PUBLIC_KEYS (the environment), ` +
        "NOT the vendor's: this is not a license from the vendor (fine for development, tests and benchmarks)",
    );
  }

  private changed(): void {
    this.cached.clear();
    this.signals.publish(LICENSE_CHANGED, 'installation');
  }
}
