import { assertRetention, AuditEvent, chainHash, ChainWalker, GENESIS_HASH } from './audit-event';

const ORG = '0f8e4a52-6c1b-4d39-9a7e-2b5c8d1e3f40';

function event(n: number, overrides: Partial<AuditEvent> = {}): Omit<AuditEvent, 'hash' | 'previousHash' | 'sequence'> {
  return {
    id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    organizationId: ORG,
    occurredAt: new Date(Date.UTC(2026, 10, 29, 8, 0, n)),
    actor: { type: 'user', id: 'u1', name: 'ada@example.com', ip: '192.0.2.1', userAgent: 'curl/8', via: 'password' },
    action: 'agent.updated',
    target: { type: 'agent', id: 'a1', name: 'triage' },
    outcome: 'success',
    requestId: `req-${n}`,
    changes: { before: { name: 'a' }, after: { name: 'b' } },
    ...overrides,
  };
}

/** `count` events chained from the genesis hash, as the sealer writes them. */
function chain(count: number): AuditEvent[] {
  const sealed: AuditEvent[] = [];
  let previousHash = GENESIS_HASH;
  for (let n = 1; n <= count; n++) {
    const hash = chainHash(previousHash, { ...event(n), sequence: n });
    sealed.push({ ...event(n), sequence: n, previousHash, hash });
    previousHash = hash;
  }
  return sealed;
}

const walk = (events: AuditEvent[], head: { sequence: number; hash: string } | null) => {
  const walker = new ChainWalker({ sequence: 1, previousHash: GENESIS_HASH });
  walker.next(events);
  walker.end(head);
  return { checked: walker.checked, firstBreak: walker.firstBreak };
};
const headOf = (events: AuditEvent[]) => ({ sequence: events.length, hash: events[events.length - 1].hash! });

describe('the audit chain', () => {
  it('hashes every field and the previous hash, whatever the order of object keys', () => {
    const base = { ...event(1), sequence: 1 };
    const reordered = {
      ...base,
      actor: { via: 'password', userAgent: 'curl/8', ip: '192.0.2.1', name: 'ada@example.com', id: 'u1', type: 'user' },
    };
    expect(chainHash(GENESIS_HASH, reordered as typeof base)).toBe(chainHash(GENESIS_HASH, base));
    expect(chainHash(GENESIS_HASH, base)).toMatch(/^[0-9a-f]{64}$/);
    const variants = [
      { ...base, sequence: 2 },
      { ...base, outcome: 'failure' as const },
      { ...base, occurredAt: new Date(base.occurredAt.getTime() + 1) },
      { ...base, changes: { before: { name: 'a' }, after: { name: 'c' } } },
      { ...base, actor: { ...base.actor, ip: '192.0.2.2' } },
    ];
    for (const variant of variants) expect(chainHash(GENESIS_HASH, variant)).not.toBe(chainHash(GENESIS_HASH, base));
    expect(chainHash('f'.repeat(64), base)).not.toBe(chainHash(GENESIS_HASH, base));
  });

  it('holds for a chain as sealed, read in batches', () => {
    const events = chain(5);
    const walker = new ChainWalker({ sequence: 1, previousHash: GENESIS_HASH });
    expect(walker.next(events.slice(0, 2))).toBe(true);
    expect(walker.next(events.slice(2))).toBe(true);
    walker.end(headOf(events));
    expect({ checked: walker.checked, firstBreak: walker.firstBreak }).toEqual({ checked: 5, firstBreak: null });
  });

  it('names an edited event, a missing one, a relinked one and missing newest ones', () => {
    const events = chain(4);
    const head = headOf(events);
    const edited = events.map((e) => (e.sequence === 3 ? { ...e, outcome: 'denied' as const } : e));
    expect(walk(edited, head)).toEqual({
      checked: 2,
      firstBreak: { sequence: 3, eventId: events[2].id, reason: 'its content does not match its hash (it was changed)' },
    });
    expect(
      walk(
        events.filter((e) => e.sequence !== 2),
        head,
      ),
    ).toEqual({
      checked: 1,
      firstBreak: { sequence: 2, eventId: null, reason: 'event 2 is missing' },
    });
    // An event rehashed after its content changed still breaks the link to the next one.
    const rehashed = events.map((e) =>
      e.sequence === 2 ? { ...e, requestId: 'forged', hash: chainHash(e.previousHash!, { ...e, requestId: 'forged', sequence: 2 }) } : e,
    );
    expect(walk(rehashed, head).firstBreak).toEqual({
      sequence: 3,
      eventId: events[2].id,
      reason: 'its previous hash is not the hash of the event before it',
    });
    expect(walk(events.slice(0, 2), head)).toEqual({
      checked: 2,
      firstBreak: { sequence: 3, eventId: null, reason: 'events 3 to 4 are missing' },
    });
    expect(walk(events, { ...head, hash: GENESIS_HASH }).firstBreak).toEqual({
      sequence: 4,
      eventId: null,
      reason: 'the chain does not end with the hash it was sealed with',
    });
    expect(walk([], null)).toEqual({ checked: 0, firstBreak: null });
  });

  it('walks a purged chain from after its last purged event, and names a start no purge recorded', () => {
    const events = chain(6);
    const head = { ...headOf(events), purgedThrough: 2, purgedHash: events[1].hash! };

    const kept = ChainWalker.from(head);
    kept.start(head, 2);
    expect(kept.nextSequence).toBe(3);
    kept.next(events.slice(2));
    kept.end(head);
    expect({ checked: kept.checked, firstBreak: kept.firstBreak }).toEqual({ checked: 4, firstBreak: null });

    const unrecorded = ChainWalker.from(head);
    unrecorded.start(head, 0);
    expect(unrecorded.firstBreak).toEqual({
      sequence: 2,
      eventId: null,
      reason: 'the chain begins after event 2, but the last recorded purge ended at 0',
    });

    // A start moved without the matching hash does not link to the first kept event.
    const moved = ChainWalker.from({ ...head, purgedHash: GENESIS_HASH });
    moved.next(events.slice(2));
    expect(moved.firstBreak).toMatchObject({ sequence: 3, reason: 'its previous hash is not the hash of the event before it' });
  });
});

describe('audit retention', () => {
  it('takes whole days from 30 to the instance cap', () => {
    expect(() => assertRetention(30, 400)).not.toThrow();
    expect(() => assertRetention(400, 400)).not.toThrow();
    for (const days of [29, 401, 30.5, Number.NaN]) {
      expect(() => assertRetention(days, 400)).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    }
  });
});
