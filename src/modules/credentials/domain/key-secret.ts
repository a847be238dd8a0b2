import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/** Who holds a key: its prefix says so (`plat_sa_`, `plat_pk_`). */
export type KeyKind = 'service_account' | 'personal';

const PREFIXES: Record<KeyKind, string> = { service_account: 'plat_sa_', personal: 'plat_pk_' };
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 32 random bytes in base62 (62^43 > 2^256). */
const BODY_LENGTH = 43;
/** CRC32 of everything before it, in base62. */
const CHECKSUM_LENGTH = 6;
/** What secret scanners can match; published in docs/concepts.md (API keys). */
export const KEY_PATTERN = /^plat_(sa|pk)_[0-9A-Za-z]{49}$/;
/** Characters of a key kept for display (`plat_sa_AbCd`). */
export const DISPLAY_PREFIX_LENGTH = 12;

export interface NewKeySecret {
  /** Shown once, never stored. */
  key: string;
  hash: string;
  displayPrefix: string;
}

export function newKeySecret(kind: KeyKind): NewKeySecret {
  const head = PREFIXES[kind] + base62(randomBytes(32), BODY_LENGTH);
  const key = head + base62(checksumBytes(head), CHECKSUM_LENGTH);
  return { key, hash: hashKey(key), displayPrefix: key.slice(0, DISPLAY_PREFIX_LENGTH) };
}

/** The kind of a well-formed key with a matching checksum; null for anything else (no lookup needed). */
export function parseKey(candidate: string): KeyKind | null {
  if (!KEY_PATTERN.test(candidate)) return null;
  const head = candidate.slice(0, -CHECKSUM_LENGTH);
  if (base62(checksumBytes(head), CHECKSUM_LENGTH) !== candidate.slice(-CHECKSUM_LENGTH)) return null;
  return candidate.startsWith(PREFIXES.service_account) ? 'service_account' : 'personal';
}

/** Keys carry 256 random bits, so one SHA-256 is enough to store them: nothing to brute-force. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function checksumBytes(head: string): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(crc32(head));
  return bytes;
}

function base62(bytes: Buffer, length: number): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(length, '0');
}
