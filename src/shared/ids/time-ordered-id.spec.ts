import { idAt, idTime, timeOrderedId } from './time-ordered-id';

describe('time-ordered ids', () => {
  const at = Date.UTC(2026, 10, 29, 13, 45, 7, 123);

  it('are version 7 UUIDs that carry the millisecond they were made', () => {
    const id = timeOrderedId(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(idTime(id)).toBe(at);
    expect(timeOrderedId(at)).not.toBe(id);
  });

  it('sort as text and as bytes by time, between the bounds of their day', () => {
    const day = Date.UTC(2026, 10, 29);
    const ids = [day, at, day + 86_400_000 - 1].map((t) => timeOrderedId(t));
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) {
      expect(id >= idAt(day)).toBe(true);
      expect(id < idAt(day + 86_400_000)).toBe(true);
    }
    expect(idAt(day)).toBe('01a22499-f800-0000-0000-000000000000');
  });

  it('tell no time for random ids', () => {
    expect(idTime('5f0c6c2e-3a55-4c1e-9a53-0a3c1b2d4e5f')).toBeUndefined();
  });
});
