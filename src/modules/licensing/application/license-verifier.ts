import { createPublicKey, KeyObject } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { compactVerify, decodeProtectedHeader, errors } from 'jose';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { LicenseClaims, LicenseKeySource, VerifiedLicense } from '../domain/license';
import { isTier, TIERS } from '../domain/tiers';
import { VENDOR_LICENSE_KEYS } from '../domain/vendor-keys';

function invalid(message: string): DomainError {
  return new DomainError('LICENSE_INVALID', message);
}

/** A public key licenses are checked against, and where it came from. */
export interface TrustedKey {
  key: KeyObject;
  source: LicenseKeySource;
}

/**
 * The keys licenses are checked against, in order: the vendor's (built in), then those
 * LICENSE_PUBLIC_KEYS adds (base64 SPKI DER). A key in both counts as the vendor's.
 */
export function keyRing(vendorKeys: readonly string[], environmentKeys: readonly string[]): TrustedKey[] {
  const ring = (keys: readonly string[], source: LicenseKeySource) =>
    keys.map((der) => ({ key: createPublicKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'spki' }), source }));
  const vendor = ring(vendorKeys, 'vendor');
  const vendorDer = new Set(vendorKeys);
  return [
    ...vendor,
    ...ring(
      environmentKeys.filter((der) => !vendorDer.has(der)),
      'environment',
    ),
  ];
}

/**
 * Verifies a license key offline: a compact JWS signed with Ed25519 (`alg: EdDSA`, nothing
 * else) by one of the keys of `ring`. Expiry is not a verification failure: an expired license
 * is kept and shown, and grants starter only.
 */
export async function verifyLicense(key: string, ring: readonly TrustedKey[]): Promise<VerifiedLicense> {
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(key).alg;
  } catch {
    throw invalid('The license key is not a compact JWS');
  }
  if (alg !== 'EdDSA') throw invalid(`The license must be signed with EdDSA (Ed25519), not ${String(alg)}`);
  for (const { key: publicKey, source } of ring) {
    try {
      const { payload } = await compactVerify(key, publicKey, { algorithms: ['EdDSA'] });
      return { claims: claimsOf(payload), verifiedBy: source };
    } catch (error) {
      if (error instanceof errors.JWSSignatureVerificationFailed) continue;
      if (error instanceof DomainError) throw error;
      throw invalid(`The license key is not valid: ${(error as Error).message}`);
    }
  }
  throw invalid("The license signature does not match the vendor's keys (nor any key in LICENSE_PUBLIC_KEYS)");
}

/** The service's verifier: the vendor's keys plus those of LICENSE_PUBLIC_KEYS. */
@Injectable()
export class LicenseVerifier {
  private readonly ring: TrustedKey[];

  constructor(config: AppConfig) {
    this.ring = keyRing(VENDOR_LICENSE_KEYS, config.licensePublicKeys);
  }

  verify(key: string): Promise<VerifiedLicense> {
    return verifyLicense(key, this.ring);
  }
}

function claimsOf(payload: Uint8Array): LicenseClaims {
  let claims: Record<string, unknown>;
  try {
    claims = JSON.parse(Buffer.from(payload).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw invalid('The license claims are not JSON');
  }
  const problems: string[] = [];
  const positiveInt = (name: string) => Number.isInteger(claims[name]) && (claims[name] as number) > 0;
  if (typeof claims.sub !== 'string' || !claims.sub) problems.push('sub (the customer)');
  if (!isTier(claims.tier)) problems.push(`tier (one of ${TIERS.join(', ')})`);
  if (!positiveInt('seats')) problems.push('seats (a positive integer)');
  if (!Array.isArray(claims.features) || !claims.features.every((f) => typeof f === 'string')) problems.push('features (a list of names)');
  if (!positiveInt('maxRateLimitPerMinute')) problems.push('maxRateLimitPerMinute (a positive integer)');
  if (!positiveInt('iat')) problems.push('iat');
  if (!positiveInt('exp')) problems.push('exp');
  if (problems.length) throw invalid(`The license lacks valid claims: ${problems.join(', ')}`);
  return claims as unknown as LicenseClaims;
}
