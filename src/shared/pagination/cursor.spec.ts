import { DomainError } from '../errors/domain-error';
import { decodeCursor, encodeCursor, toPage } from './cursor';

describe('keyset cursor', () => {
  const position = { createdAt: new Date('2026-01-02T03:04:05.678Z'), id: '0b8c8a64-7d7e-4a4b-9a46-1f8f0f5c1a10' };

  it('round-trips a position', () => {
    expect(decodeCursor(encodeCursor(position))).toEqual(position);
  });

  it('refuses a forged cursor as a validation failure', () => {
    for (const bad of ['garbage', Buffer.from('["nope","x"]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
      expect(() => decodeCursor(bad)).toThrow(DomainError);
    }
  });

  it('gives a next cursor only when another page follows', () => {
    const rows = [0, 1, 2].map((i) => ({ ...position, id: `0b8c8a64-7d7e-4a4b-9a46-1f8f0f5c1a1${i}` }));
    expect(toPage(rows, 2, (r) => r.id)).toEqual({ data: [rows[0].id, rows[1].id], nextCursor: encodeCursor(rows[1]) });
    expect(toPage(rows.slice(0, 2), 2, (r) => r.id).nextCursor).toBeNull();
  });
});
