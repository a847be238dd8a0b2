/**
 * Port: the seats each organization may use of the license's (operators set them; the
 * organizations module keeps and implements them, so licensing need not know organizations).
 */
export abstract class SeatQuotas {
  /** null: no quota of its own, only the license limits it (also for an unknown organization). */
  abstract quotaOf(organizationId: string): Promise<number | null>;
}

/** The users one organization may have; null where nothing limits them. */
export interface SeatLimits {
  /** The license's seats, across the installation. */
  installation: number | null;
  /** The organization's own quota. */
  organization: number | null;
}
