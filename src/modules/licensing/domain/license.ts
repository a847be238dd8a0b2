import { lowerTier, Tier, UNLICENSED_TIER } from './tiers';
import { TRIAL_MAX_RATE_LIMIT_PER_MINUTE, TRIAL_TIER, TrialPeriod } from './trial';

/** What a license grants, from its signed claims. */
export interface LicenseClaims {
  /** The customer. */
  sub: string;
  /** The highest tier the installation may use. */
  tier: Tier;
  /** Users across the installation. */
  seats: number;
  features: string[];
  maxRateLimitPerMinute: number;
  iat: number;
  exp: number;
}

/**
 * Which key verified a license: one of the vendor's, built into the release (vendor-keys.ts),
 * or one added through LICENSE_PUBLIC_KEYS (development, tests, benchmarks).
 */
export type LicenseKeySource = 'vendor' | 'environment';
export const LICENSE_KEY_SOURCES: readonly LicenseKeySource[] = ['vendor', 'environment'];

/** A license whose signature checked out, and the kind of key that checked it. */
export interface VerifiedLicense {
  claims: LicenseClaims;
  verifiedBy: LicenseKeySource;
}

export interface InstalledLicense extends VerifiedLicense {
  key: string;
  installedAt: Date;
}

/** The warning that goes with a license verified by a key from the environment. */
export const ENVIRONMENT_KEY_WARNING =
  "The license was verified against a key from LICENSE_PUBLIC_KEYS (the environment), not against the vendor's keys: " +
  'fit for development, tests and benchmarks, not a license from the vendor';

export type LicenseStatus = 'none' | 'valid' | 'expired';

/**
 * The license as the installation sees it at `now`, with the trial when TRIAL=true: while the
 * trial lasts every organization has the trial's tier; after it, what the license allows.
 */
export class LicenseState {
  constructor(
    readonly license: InstalledLicense | null,
    private readonly now: Date = new Date(),
    /** Set with TRIAL=true only, active or ended. */
    readonly trial: TrialPeriod | null = null,
  ) {}

  /** A trial is in force now. */
  get trialActive(): boolean {
    return this.trial?.active ?? false;
  }

  get status(): LicenseStatus {
    if (!this.license) return 'none';
    return this.license.claims.exp * 1000 <= this.now.getTime() ? 'expired' : 'valid';
  }

  get valid(): boolean {
    return this.status === 'valid';
  }

  /** The highest tier organizations may have: the license's, or starter without a valid one; during a trial, the trial's. */
  get maxTier(): Tier {
    return this.trialActive ? TRIAL_TIER : this.licensedTier;
  }

  /** The highest tier the license itself allows, whatever a trial gives for now. */
  get licensedTier(): Tier {
    return this.valid ? this.license!.claims.tier : UNLICENSED_TIER;
  }

  /** Users the installation may have; null: no limit (no license, starter only). */
  get seats(): number | null {
    return this.valid ? this.license!.claims.seats : null;
  }

  get maxRateLimitPerMinute(): number | null {
    if (this.valid) return this.license!.claims.maxRateLimitPerMinute;
    return this.trialActive ? TRIAL_MAX_RATE_LIMIT_PER_MINUTE : null;
  }

  /**
   * The tier an organization gets: what operators assigned, never above what the license allows;
   * during a trial, the trial's tier whatever was assigned.
   */
  effectiveTier(assigned: Tier): Tier {
    if (this.trialActive) return TRIAL_TIER;
    return lowerTier(assigned, this.maxTier);
  }

  warnings(): string[] {
    // The trial first: while it lasts it is what organizations get, after it why they lost it.
    const trial = this.trial ? [this.trial.describe()] : [];
    if (!this.license) {
      return this.trialActive ? trial : [...trial, 'No license is installed; every organization is limited to starter'];
    }
    const warnings: string[] = [...trial];
    if (this.status === 'expired') {
      warnings.push(
        `The license expired on ${new Date(this.license.claims.exp * 1000).toISOString()}; ` +
          (this.trialActive ? 'organizations have the trial until it ends, then starter' : 'every organization is limited to starter'),
      );
    }
    if (this.license.verifiedBy === 'environment') warnings.push(ENVIRONMENT_KEY_WARNING);
    return warnings;
  }
}
