import { createHash } from 'node:crypto';

/**
 * A UUID (version 5 layout, SHA-1 of the service's namespace and `name`) that is the same for
 * the same name: a record created on behalf of an idempotency key gets the same id on every try.
 */
export function stableUuid(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(name).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The namespace of the platform's stable ids (a random UUID, fixed once). */
const NAMESPACE = Buffer.from('3c0f5e4a9b6d4f2e8a1c7d5b2e9f6a13', 'hex');
