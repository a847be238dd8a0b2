import { createPublicKey, KeyObject } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { compactVerify, decodeProtectedHeader, errors } from 'jose';
import { AppConfig } from '../../../config/app-config';
import { DomainError } from '../../../shared/errors/domain-error';
import { LicenseClaims } from '../domain/license';
import { isTier, TIERS } from '../domain/tiers';

function invalid(message: string): DomainError {
  return new DomainError('LICENSE_INVALID', message);
}

/**
 * Verifies license keys offline: a compact JWS signed with Ed25519 (`alg: EdDSA`, nothing
 * else) by one of the vendor keys in LICENSE_PUBLIC_KEYS (several, for rotation). Expiry is
 * not a verification failure: an expired license is kept and shown, and grants starter only.
 */
@Injectable()
export class LicenseVerifier {
  private readonly keys: KeyObject[];

  constructor(config: AppConfig) {
    this.keys = config.licensePublicKeys.map((der) => createPublicKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'spki' }));
  }

  async verify(key: string): Promise<LicenseClaims> {
    if (!this.keys.length) throw invalid('No license public keys are configured (LICENSE_PUBLIC_KEYS)');
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(key).alg;
    } catch {
      throw invalid('The license key is not a compact JWS');
    }
    if (alg !== 'EdDSA') throw invalid(`The license must be signed with EdDSA (Ed25519), not ${String(alg)}`);
    for (const publicKey of this.keys) {
      try {
        const { payload } = await compactVerify(key, publicKey, { algorithms: ['EdDSA'] });
        return claimsOf(payload);
      } catch (error) {
        if (error instanceof errors.JWSSignatureVerificationFailed) continue;
        if (error instanceof DomainError) throw error;
        throw invalid(`The license key is not valid: ${(error as Error).message}`);
      }
    }
    throw invalid('The license signature does not match any configured vendor key');
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
