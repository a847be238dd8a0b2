import { SecretBox } from './secret-box';

/** A secret; one being rotated out keeps working until `expiresAt` (null: the current one). */
export interface RotatingSecret {
  secret: string;
  expiresAt: Date | null;
}

/** The secrets in force at `now`: the current one first, and an older one still in its grace window. */
export function liveSecrets(secrets: readonly RotatingSecret[], now: Date): string[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret);
}

/** `secret` as the current one; the current one so far keeps working for `graceSeconds` (0: not at all). */
export function rotated(secrets: readonly RotatingSecret[], secret: string, graceSeconds: number, now: Date): RotatingSecret[] {
  const old = { secret: secrets[0].secret, expiresAt: new Date(now.getTime() + graceSeconds * 1000) };
  return [{ secret, expiresAt: null }, ...(graceSeconds > 0 ? [old] : [])];
}

/** The secrets with their expiry as one sealed JSON array, bound to `owner` (its associated data). */
export function sealSecrets(box: SecretBox, secrets: readonly RotatingSecret[], owner: string): string {
  return box.seal(JSON.stringify(secrets.map((s) => ({ secret: s.secret, expiresAt: s.expiresAt?.toISOString() ?? null }))), owner);
}

/** The secrets `sealSecrets` sealed for `owner`. */
export function openSecrets(box: SecretBox, sealed: string, owner: string): RotatingSecret[] {
  const secrets = JSON.parse(box.open(sealed, owner)) as Array<{ secret: string; expiresAt: string | null }>;
  return secrets.map((s) => ({ secret: s.secret, expiresAt: s.expiresAt ? new Date(s.expiresAt) : null }));
}
