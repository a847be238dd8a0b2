import { Tier } from './tiers';

/** TRIAL=true: every organization gets this tier, for this many days from the installation's first start in trial mode. */
export const TRIAL_TIER: Tier = 'enterprise';
export const TRIAL_DAYS = 30;
/** The highest rate limit an organization may set during a trial without a valid license of its own. */
export const TRIAL_MAX_RATE_LIMIT_PER_MINUTE = 10_000;

const DAY_MS = 86_400_000;

/** The trial as the installation sees it at one moment. */
export class TrialPeriod {
  readonly endsAt: Date;

  constructor(
    /** When the installation first started with TRIAL=true (recorded once). */
    readonly startedAt: Date,
    private readonly now: Date = new Date(),
  ) {
    this.endsAt = new Date(startedAt.getTime() + TRIAL_DAYS * DAY_MS);
  }

  get active(): boolean {
    return this.now.getTime() < this.endsAt.getTime();
  }

  /** Whole days left, counting a started day as one; 0 once it has ended. */
  get daysLeft(): number {
    return Math.max(0, Math.ceil((this.endsAt.getTime() - this.now.getTime()) / DAY_MS));
  }

  /** What the boot log, the startup line and the license's warnings say of it. */
  describe(): string {
    return this.active
      ? `Trial mode (TRIAL=true): every organization has the ${TRIAL_TIER} tier's features and outbound calls may reach ` +
          `loopback and private addresses until ${this.endsAt.toISOString()} (${this.daysLeft} ${this.daysLeft === 1 ? 'day' : 'days'} left)`
      : `The trial ended on ${this.endsAt.toISOString()}: organizations have what the license allows (starter without one) ` +
          'and loopback and private targets are refused again unless OUTBOUND_ALLOWLIST lists them';
  }
}

/** Port: when the installation's trial started; recorded once, on its first start in trial mode. */
export abstract class TrialRepository {
  /** Records `at` as the start unless one is recorded already; answers the recorded start. */
  abstract start(at: Date): Promise<Date>;
}
