import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { isTier, Tier, TIER_FEATURES, TIERS } from '../domain/tiers';

/** What the vendor grants in one license. */
export interface LicenseGrant {
  customer: string;
  tier: Tier;
  seats: number;
  days: number;
  features?: string[];
  maxRateLimitPerMinute?: number;
}

/** The vendor side: signs a license with an Ed25519 private key (PEM, PKCS#8). */
export async function issueLicense(grant: LicenseGrant, privateKeyPem: string, now = new Date()): Promise<string> {
  if (!isTier(grant.tier)) throw new Error(`tier must be one of ${TIERS.join(', ')}`);
  if (!Number.isInteger(grant.seats) || grant.seats < 1) throw new Error('seats must be a positive integer');
  if (!(grant.days > 0)) throw new Error('days must be positive');
  const key: KeyObject = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('the key must be an Ed25519 private key');
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({
    tier: grant.tier,
    seats: grant.seats,
    features: grant.features ?? [...TIER_FEATURES[grant.tier]],
    maxRateLimitPerMinute: grant.maxRateLimitPerMinute ?? 10_000,
  })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setSubject(grant.customer)
    .setIssuedAt(iat)
    .setExpirationTime(iat + Math.round(grant.days * 86400))
    .sign(key);
}

/** A new vendor key pair: the private key as PEM, the public key as LICENSE_PUBLIC_KEYS wants it. */
export function generateLicenseKeyPair(): { privateKeyPem: string; publicKeyBase64: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKeyBase64: publicKeyBase64(privateKey),
  };
}

export function publicKeyBase64(privateKey: KeyObject): string {
  return createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).toString('base64');
}
