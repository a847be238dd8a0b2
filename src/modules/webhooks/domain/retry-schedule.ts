/**
 * When a failed delivery is tried again: about 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
 * 20 h and 24 h after the previous attempt (the first attempt is the 0 s one), each with up to
 * 20 % jitter so receivers coming back are not hit by every sender at once. A receiver's
 * `Retry-After` (seconds or an HTTP date) is honoured when it asks for longer, up to 24 h.
 */
const DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000];
const MAX_RETRY_AFTER_MS = 86_400_000;
const JITTER = 0.2;

/** Attempts a message gets at most. */
export const MAX_ATTEMPTS = DELAYS_MS.length + 1;

/**
 * Milliseconds until the attempt after `attempts` (the count made so far), or null when none is
 * left. `random` is injectable so specs are exact.
 */
export function nextAttemptDelay(attempts: number, retryAfterMs: number | null, random: () => number = Math.random): number | null {
  if (attempts >= MAX_ATTEMPTS) return null;
  const base = DELAYS_MS[attempts - 1];
  const jittered = Math.round(base * (1 + (random() * 2 - 1) * JITTER));
  return retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** A `Retry-After` header as milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now.getTime());
}
