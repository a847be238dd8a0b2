import { MAX_ATTEMPTS, nextAttemptDelay, parseRetryAfter } from './retry-schedule';

describe('the retry schedule', () => {
  const middle = () => 0.5;

  it('waits about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h, then gives up', () => {
    const delays = Array.from({ length: MAX_ATTEMPTS }, (_, i) => nextAttemptDelay(i + 1, null, middle));
    expect(delays).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000, null]);
  });

  it('spreads each delay by up to 20 % either way', () => {
    expect(nextAttemptDelay(1, null, () => 0)).toBe(4_000);
    expect(nextAttemptDelay(1, null, () => 0.999999)).toBe(6_000);
  });

  it('honours a longer Retry-After, capped at 24 h, and never waits less than the schedule', () => {
    expect(nextAttemptDelay(1, 60_000, middle)).toBe(60_000);
    expect(nextAttemptDelay(1, 2_000, middle)).toBe(5_000);
    expect(nextAttemptDelay(2, 7 * 86_400_000, middle)).toBe(86_400_000);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
