/** The license as kept: the key as given (its claims are verified again on every load). */
export interface StoredLicense {
  key: string;
  installedBy: string | null;
  installedAt: Date;
}

/** Port: the installation has at most one license. */
export abstract class LicenseRepository {
  abstract find(): Promise<StoredLicense | null>;
  /** Installs it in place of the one before, if any. */
  abstract replace(license: StoredLicense): Promise<void>;
  /** false: none was installed. */
  abstract remove(): Promise<boolean>;
}
