import { Injectable, OnModuleInit } from '@nestjs/common';
import { JobReconciler } from '../../../queue/job-reconciler';
import { Principal } from '../../../shared/auth/principal';
import { Page, PageRequest } from '../../../shared/pagination/cursor';
import {
  AuditEvent,
  AuditEventRepository,
  AuditFilters,
  chainHash,
  ChainCheck,
  ChainWalker,
  GENESIS_HASH,
  Seal,
} from '../domain/audit-event';

/** Events sealed per transaction. */
const SEAL_BATCH = 1000;
/** Events read per query while verifying. */
const VERIFY_BATCH = 1000;

/**
 * Reading an organization's audit log, and keeping its chain: events are written unsealed (a
 * plain insert in the change's transaction, so concurrent changes never wait on one another),
 * then sealed in the order they are found, by one process at a time: each gets the next
 * sequence number of its organization and a hash over the previous one and itself. The
 * reconciler's pass (every 10 s on worker processes) seals what is pending; so does a verify,
 * for its organization, before it walks the chain.
 */
@Injectable()
export class AuditEventsService implements OnModuleInit {
  constructor(
    private readonly events: AuditEventRepository,
    private readonly reconciler: JobReconciler,
  ) {}

  onModuleInit(): void {
    this.reconciler.addChore(() => this.sealPending());
  }

  list(caller: Principal, filters: AuditFilters, page: PageRequest): Promise<Page<AuditEvent>> {
    return this.events.list(caller.organizationId, filters, page);
  }

  /** Seals what is pending (of one organization, or all); answers how many were sealed. */
  async sealPending(organizationId: string | null = null): Promise<number> {
    let total = 0;
    for (;;) {
      const sealed = await this.events.sealPending(organizationId, SEAL_BATCH, seal);
      total += sealed;
      if (sealed < SEAL_BATCH) return total;
    }
  }

  /** Seals the organization's pending events, then walks its whole chain; names the first break. */
  async verify(caller: Principal): Promise<ChainCheck> {
    const { organizationId } = caller;
    await this.sealPending(organizationId);
    const walker = new ChainWalker({ sequence: 1, previousHash: GENESIS_HASH });
    for (let from = 1; ; from += VERIFY_BATCH) {
      const batch = await this.events.chain(organizationId, from, VERIFY_BATCH);
      if (!walker.next(batch) || batch.length < VERIFY_BATCH) break;
    }
    walker.end(await this.events.head(organizationId));
    return { checked: walker.checked, unsealed: await this.events.countUnsealed(organizationId), firstBreak: walker.firstBreak };
  }
}

/** The seals of `events` (oldest first), each chained to its organization's head or the one sealed before it. */
function seal(events: AuditEvent[], heads: Map<string, { sequence: number; hash: string }>): Seal[] {
  const tips = new Map(heads);
  return events.map((event) => {
    const tip = tips.get(event.organizationId) ?? { sequence: 0, hash: GENESIS_HASH };
    const sequence = tip.sequence + 1;
    const hash = chainHash(tip.hash, { ...event, sequence });
    tips.set(event.organizationId, { sequence, hash });
    return { id: event.id, organizationId: event.organizationId, occurredAt: event.occurredAt, sequence, previousHash: tip.hash, hash };
  });
}
