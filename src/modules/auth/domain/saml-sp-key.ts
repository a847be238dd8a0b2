import { randomUUID } from 'node:crypto';

/** How long a rotated-out SP key pair keeps working unless the rotation says otherwise. */
export const DEFAULT_OVERLAP_MS = 7 * 86_400_000;
/** How long an SP certificate is valid: far beyond any rotation schedule; IdPs do not check it. */
export const SP_CERTIFICATE_DAYS = 10 * 365;

export interface SamlSpKeyProps {
  id: string;
  organizationId: string;
  /** PEM. Published in the SP metadata, for signing and encryption. */
  certificate: string;
  /** PKCS#8 PEM. Stored sealed, never shown. */
  privateKey: string;
  createdAt: Date;
  /** Null for the current pair; for a rotated-out one, when it stops decrypting and leaves the metadata. */
  retireAt: Date | null;
}

/**
 * One of an organization's service-provider key pairs: one RSA key and its self-signed
 * certificate, used both to sign (AuthnRequests, logout messages) and to decrypt assertions.
 * The current pair signs; a rotated-out pair still decrypts and is still published until its
 * `retireAt`, so assertions an IdP encrypts to the old certificate keep working while the IdP
 * picks up the new metadata.
 */
export class SamlSpKey {
  private constructor(readonly props: Readonly<SamlSpKeyProps>) {}

  static create(organizationId: string, pair: { certificate: string; privateKey: string }, now = new Date()): SamlSpKey {
    return new SamlSpKey({ id: randomUUID(), organizationId, ...pair, createdAt: now, retireAt: null });
  }

  static rehydrate(props: SamlSpKeyProps): SamlSpKey {
    return new SamlSpKey({ ...props });
  }

  get isCurrent(): boolean {
    return this.props.retireAt === null;
  }

  isLive(now = new Date()): boolean {
    return this.props.retireAt === null || this.props.retireAt > now;
  }
}

/** The pairs in force at `now`: the current one first, then the rotated-out ones still in their overlap, newest first. */
export function liveKeys(keys: readonly SamlSpKey[], now = new Date()): SamlSpKey[] {
  return keys
    .filter((k) => k.isLive(now))
    .sort((a, b) => Number(b.isCurrent) - Number(a.isCurrent) || b.props.createdAt.getTime() - a.props.createdAt.getTime());
}
