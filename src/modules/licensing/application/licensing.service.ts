import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { Signals } from '../../../queue/signals';
import { DomainError } from '../../../shared/errors/domain-error';
import { InstalledLicense, LicenseClaims, LicenseState } from '../domain/license';
import { LicenseRow } from '../infrastructure/license.orm-entity';
import { LicenseVerifier } from './license-verifier';
import { ConfigError } from '../../../config/environment';

/** Signal topic: the license was installed or removed (cached limits re-read it). */
export const LICENSE_CHANGED = 'license.changed';
/** Arbitrary but fixed: serializes user creation while seats are limited. */
const SEAT_LOCK_KEY = 728_394_002;
/** How long a process trusts its copy of the license; changes elsewhere reach it by signal sooner. */
const CACHE_MS = 30_000;

type InstalledListener = (claims: LicenseClaims) => Promise<void>;

/**
 * The installation's license: stored in one row, verified on every install and load, and
 * cached per process (a change anywhere is signalled to every process).
 */
@Injectable()
export class LicensingService {
  private readonly logger = new Logger('Licensing');
  private cached: { at: number; license: Promise<InstalledLicense | null> } | null = null;
  private readonly installedListeners: InstalledListener[] = [];

  constructor(
    private readonly config: AppConfig,
    private readonly verifier: LicenseVerifier,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly signals: Signals,
  ) {
    this.signals.on(LICENSE_CHANGED, () => (this.cached = null));
  }

  /** Installs LICENSE_KEY unless it is the one installed; run by the first-start bootstrap. */
  async applyConfiguredKey(): Promise<void> {
    const key = this.config.licenseKey;
    if (!key) return;
    const current = await this.load();
    if (current?.key === key) return;
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

  /** Organizations register here to be raised to the licensed tier (the single-organization case). */
  onInstalled(listener: InstalledListener): void {
    this.installedListeners.push(listener);
  }

  async state(): Promise<LicenseState> {
    return new LicenseState(await this.load());
  }

  async install(key: string, installedBy: string | null): Promise<LicenseClaims> {
    const claims = await this.verifier.verify(key);
    await this.txHost.withTransaction(async () => {
      await this.rows.upsert({ id: 1, key, installedBy, installedAt: new Date() }, ['id']);
      for (const listener of this.installedListeners) await listener(claims);
    });
    this.changed();
    return claims;
  }

  async remove(): Promise<void> {
    const result = await this.rows.delete({ id: 1 });
    if (!result.affected) throw new DomainError('LICENSE_INVALID', 'No license is installed');
    this.changed();
  }

  /**
   * SEAT_LIMIT_REACHED when the installation already has as many users as the license allows.
   * Call it in the transaction that inserts the user: it holds a lock until that ends, so two
   * concurrent creates cannot both take the last seat.
   */
  /**
   * SEAT_LIMIT_REACHED when the organization has used its own quota (so one organization
   * cannot take every seat of the installation from the others), or the license's seats are
   * all taken.
   */
  async assertSeatAvailable(organizationId: string): Promise<void> {
    const seats = (await this.state()).seats;
    await this.txHost.tx.query('SELECT pg_advisory_xact_lock($1)', [SEAT_LOCK_KEY]);
    const [quota] = await this.txHost.tx.query<Array<{ seat_quota: number | null; used: string }>>(
      'SELECT o.seat_quota, (SELECT count(*) FROM users u WHERE u.organization_id = o.id) AS used FROM organizations o WHERE o.id = $1',
      [organizationId],
    );
    if (quota?.seat_quota != null && Number(quota.used) >= quota.seat_quota) {
      throw new DomainError('SEAT_LIMIT_REACHED', `This organization has used its ${quota.seat_quota} seats`);
    }
    if (seats === null) return;
    const used = await this.seatsUsed();
    if (used >= seats) throw new DomainError('SEAT_LIMIT_REACHED', `The license allows ${seats} users and all are taken`);
  }

  async seatsUsed(): Promise<number> {
    const [{ count }] = await this.txHost.tx.query<Array<{ count: string }>>('SELECT count(*) AS count FROM users');
    return Number(count);
  }

  private get rows() {
    return this.txHost.tx.getRepository(LicenseRow);
  }

  private load(): Promise<InstalledLicense | null> {
    if (!this.cached || Date.now() - this.cached.at > CACHE_MS) {
      const license = this.read();
      license.catch(() => (this.cached = null));
      this.cached = { at: Date.now(), license };
    }
    return this.cached.license;
  }

  private async read(): Promise<InstalledLicense | null> {
    const row = await this.rows.findOneBy({ id: 1 });
    if (!row) return null;
    try {
      return { key: row.key, claims: await this.verifier.verify(row.key), installedAt: row.installedAt };
    } catch (error) {
      // A stored license no configured key verifies (the vendor key was rotated away): none.
      this.logger.warn(`The stored license is not valid: ${(error as Error).message}`);
      return null;
    }
  }

  private changed(): void {
    this.cached = null;
    this.signals.publish(LICENSE_CHANGED, 'installation');
  }
}
