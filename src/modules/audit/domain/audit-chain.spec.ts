import { randomBytes } from 'node:crypto';
import { ChainHead, chainHash, ChainKey, chainKey, ChainWalker, GENESIS_HASH, keyedStartMac } from './audit-chain';
import { AuditEvent } from './audit-event';

const ORG = '0f8e4a52-6c1b-4d39-9a7e-2b5c8d1e3f40';
const KEY = chainKey(randomBytes(32));

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

/**
 * `count` events chained from the genesis hash, as the sealer writes them: with `key` from
 * `keyedFrom` on, with plain SHA-256 before (events sealed before the chain was keyed).
 */
function chain(count: number, key: ChainKey | null = KEY, keyedFrom = 1): AuditEvent[] {
  const sealed: AuditEvent[] = [];
  let previousHash = GENESIS_HASH;
  for (let n = 1; n <= count; n++) {
    const hash = chainHash(previousHash, { ...event(n), sequence: n }, n >= keyedFrom ? key : null);
    sealed.push({ ...event(n), sequence: n, previousHash, hash });
    previousHash = hash;
  }
  return sealed;
}

/** The head the sealer leaves: keyed from `keyedFrom`, signed over the hash before it. */
function headOf(events: AuditEvent[], keyedFrom = 1, key = KEY): ChainHead {
  const before = keyedFrom === 1 ? GENESIS_HASH : events[keyedFrom - 2].hash!;
  return {
    sequence: events.length,
    hash: events.length ? events[events.length - 1].hash! : GENESIS_HASH,
    purgedThrough: 0,
    purgedHash: null,
    keyedFrom,
    keyedMac: keyedStartMac(key, ORG, keyedFrom, before),
  };
}

const walk = (events: AuditEvent[], head: ChainHead | null, key = KEY) => {
  const walker = ChainWalker.from(head, key, ORG);
  walker.next(events);
  walker.end(head);
  return { checked: walker.checked, firstBreak: walker.firstBreak };
};

describe('the audit chain', () => {
  it('hashes every field and the previous hash, whatever the order of object keys', () => {
    const base = { ...event(1), sequence: 1 };
    const reordered = {
      ...base,
      actor: { via: 'password', userAgent: 'curl/8', ip: '192.0.2.1', name: 'ada@example.com', id: 'u1', type: 'user' },
    };
    expect(chainHash(GENESIS_HASH, reordered as typeof base, KEY)).toBe(chainHash(GENESIS_HASH, base, KEY));
    expect(chainHash(GENESIS_HASH, base, KEY)).toMatch(/^[0-9a-f]{64}$/);
    const variants = [
      { ...base, sequence: 2 },
      { ...base, outcome: 'failure' as const },
      { ...base, occurredAt: new Date(base.occurredAt.getTime() + 1) },
      { ...base, changes: { before: { name: 'a' }, after: { name: 'c' } } },
      { ...base, actor: { ...base.actor, ip: '192.0.2.2' } },
    ];
    for (const variant of variants) expect(chainHash(GENESIS_HASH, variant, KEY)).not.toBe(chainHash(GENESIS_HASH, base, KEY));
    expect(chainHash('f'.repeat(64), base, KEY)).not.toBe(chainHash(GENESIS_HASH, base, KEY));
  });

  it('holds for a chain as sealed, read in batches', () => {
    const events = chain(5);
    const walker = ChainWalker.from(headOf(events), KEY, ORG);
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
      e.sequence === 2
        ? { ...e, requestId: 'forged', hash: chainHash(e.previousHash!, { ...e, requestId: 'forged', sequence: 2 }, KEY) }
        : e,
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

    const kept = ChainWalker.from(head, KEY, ORG);
    kept.start(head, 2);
    expect(kept.nextSequence).toBe(3);
    kept.next(events.slice(2));
    kept.end(head);
    expect({ checked: kept.checked, firstBreak: kept.firstBreak }).toEqual({ checked: 4, firstBreak: null });

    const unrecorded = ChainWalker.from(head, KEY, ORG);
    unrecorded.start(head, 0);
    expect(unrecorded.firstBreak).toEqual({
      sequence: 2,
      eventId: null,
      reason: 'the chain begins after event 2, but the last recorded purge ended at 0',
    });

    // A start moved without the matching hash does not link to the first kept event.
    const moved = ChainWalker.from({ ...head, purgedHash: GENESIS_HASH }, KEY, ORG);
    moved.next(events.slice(2));
    expect(moved.firstBreak).toMatchObject({ sequence: 3, reason: 'its previous hash is not the hash of the event before it' });
  });

  it('is keyed: a chain rehashed with plain SHA-256, or with another key, breaks at its first event', () => {
    const events = chain(3);
    expect(walk(events, headOf(events))).toEqual({ checked: 3, firstBreak: null });
    expect(chainHash(GENESIS_HASH, { ...event(1), sequence: 1 }, KEY)).not.toBe(
      chainHash(GENESIS_HASH, { ...event(1), sequence: 1 }, null),
    );
    // Someone with the database only: edits event 2 and relinks everything with plain SHA-256.
    const rehashed = chain(3, null).map((e) => (e.sequence === 2 ? { ...e, outcome: 'denied' as const } : e));
    const relinked = rehashed.reduce<AuditEvent[]>((done, e) => {
      const previousHash = done.length ? done[done.length - 1].hash! : GENESIS_HASH;
      return [...done, { ...e, previousHash, hash: chainHash(previousHash, { ...e, sequence: e.sequence! }, null) }];
    }, []);
    expect(walk(relinked, { ...headOf(events), hash: relinked[2].hash! }).firstBreak).toEqual({
      sequence: 1,
      eventId: events[0].id,
      reason: 'its content does not match its hash (it was changed)',
    });
    // The same with a key of their own, and a keyed start they signed with it.
    const otherKey = chainKey(randomBytes(32));
    const forged = chain(3, otherKey);
    expect(walk(forged, headOf(forged, 1, otherKey)).firstBreak).toEqual({
      sequence: 1,
      eventId: null,
      reason: "the chain's keyed start (event 1) is not signed with the chain key",
    });
  });

  it('checks plain links before the keyed start and keyed ones from it, and names a start moved or unsigned', () => {
    // Two events sealed before the key, two after.
    const events = chain(4, KEY, 3);
    const head = headOf(events, 3);
    expect(walk(events, head)).toEqual({ checked: 4, firstBreak: null });
    // A chain begun before the key, no event sealed since: its last plain link is signed.
    const legacy = chain(2, null);
    expect(walk(legacy, headOf(legacy, 3))).toEqual({ checked: 2, firstBreak: null });
    const unsigned = { ...headOf(legacy, 3), keyedMac: null };
    expect(walk(legacy, unsigned).firstBreak).toEqual({
      sequence: 3,
      eventId: null,
      reason: "the chain's keyed start (event 3) is not signed with the chain key",
    });
    // Keyed events relinked with plain SHA-256 and the start moved past them: the start's signature does not cover it.
    const downgraded = chain(4, null);
    expect(walk(downgraded, { ...headOf(downgraded, 5), keyedMac: head.keyedMac }).firstBreak).toMatchObject({
      sequence: 5,
      reason: "the chain's keyed start (event 5) is not signed with the chain key",
    });
    // Plain links rewritten before the keyed start: the start's signature is over the old hash.
    const rewritten = chain(4, KEY, 3).map((e) => (e.sequence === 1 ? { ...e, requestId: 'forged' } : e));
    let previousHash = GENESIS_HASH;
    const relinked = rewritten.map((e) => {
      const hash = chainHash(previousHash, { ...e, sequence: e.sequence! }, e.sequence! >= 3 ? KEY : null);
      const linked = { ...e, previousHash, hash: e.sequence! >= 3 ? e.hash : hash };
      previousHash = hash;
      return linked;
    });
    expect(walk(relinked, head).firstBreak).toMatchObject({
      sequence: 3,
      reason: "the chain's keyed start (event 3) is not signed with the chain key",
    });
    // A head gone: its events are not taken as unkeyed.
    expect(walk(events, null).firstBreak).toMatchObject({
      sequence: 1,
      reason: "the chain's keyed start (event 1) is not signed with the chain key",
    });
  });
});
