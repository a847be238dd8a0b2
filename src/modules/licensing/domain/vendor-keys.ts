/**
 * The vendor's license keys: Ed25519 public keys, base64 of the SPKI DER, newest first. A
 * license signed by one of them is a vendor's license (`verifiedBy: "vendor"`). The private
 * halves are held by the vendor alone, never in this repository or an installation.
 *
 * To rotate: the vendor makes a new pair (`npm run license:issue -- --new-key vendor.pem`, on
 * the vendor's machine), adds its public key at the top here and ships a release; the old key
 * stays until the licenses it signed have expired.
 *
 * LICENSE_PUBLIC_KEYS adds keys to this ring for development, tests and benchmarks; a license
 * one of those verifies is marked `verifiedBy: "environment"`, with a warning.
 */
export const VENDOR_LICENSE_KEYS: readonly string[] = [
  // 2026-11: the first vendor key.
  'MCowBQYDK2VwAyEAg9hhgjmezriLna5WyiO+qYplEWKbUkpKHdEZorw1u5c=',
];
