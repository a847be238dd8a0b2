import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API keys as the contract describes them, written from it (not taken from src/): `plat_sa_` or
 * `plat_pk_`, 43 base62 characters of randomness, then 6 base62 characters of CRC32 of
 * everything before them. Used to check a real key's checksum and to forge keys that are
 * well-formed but unknown, or known but with a broken checksum.
 */
export const KEY_PATTERN = /^plat_(sa|pk)_[0-9A-Za-z]{49}$/;
export const DISPLAY_PREFIX_LENGTH = 12;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;

function base62(value: bigint, length: number): string {
  let out = '';
  for (let n = value; n > 0n; n /= 62n) out = ALPHABET[Number(n % 62n)] + out;
  return out.padStart(length, '0');
}

/** The 6 checksum characters of a key whose other characters are `head`: CRC32 in base62, most significant first. */
export function checksumOf(head: string): string {
  return base62(BigInt(crc32(head)), CHECKSUM_LENGTH);
}

/** A key nobody issued, with a valid checksum: it passes the format check and needs a lookup. */
export function forgeKey(prefix: 'plat_sa_' | 'plat_pk_'): string {
  const head = prefix + base62(BigInt(`0x${randomBytes(32).toString('hex')}`), BODY_LENGTH);
  return head + checksumOf(head);
}

/** The key with character `index` (from the end when negative) replaced by another base62 character. */
export function withCharacterChanged(key: string, index: number): string {
  const at = index < 0 ? key.length + index : index;
  const replacement = key[at] === 'A' ? 'B' : 'A';
  return key.slice(0, at) + replacement + key.slice(at + 1);
}

/**
 * A key in every form a log line or an answer could carry its secret: whole, without `plat_`,
 * without its shown prefix, and its random part without the checksum (what a log of a key with
 * one character changed would still reveal). The first 12 characters are public (`prefix`).
 */
export function secretFormsOf(key: string): string[] {
  return [key, key.slice('plat_'.length), key.slice(DISPLAY_PREFIX_LENGTH), key.slice(DISPLAY_PREFIX_LENGTH, -CHECKSUM_LENGTH)];
}

/** Authorization header for an API key, the way `bearer()` builds one for a user. */
export const withKey = (key: string) => ({ Authorization: `Bearer ${key}` });
