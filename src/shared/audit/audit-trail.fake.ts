import { AuditEntry, AuditTrail } from './audit-trail';

/** For unit specs: keeps what was recorded, in order. */
export class RecordingAuditTrail extends AuditTrail {
  readonly entries: AuditEntry[] = [];

  record(...entries: AuditEntry[]): Promise<void> {
    this.entries.push(...entries);
    return Promise.resolve();
  }
}
