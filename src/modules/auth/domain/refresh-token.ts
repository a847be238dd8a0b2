import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { SignInMethod } from '../../../shared/auth/principal';

export interface RefreshTokenProps {
  id: string;
  userId: string;
  organizationId: string;
  familyId: string;
  /** The user's credentials version when issued: a later password, role or status change refuses it. */
  credentialsVersion: number;
  tokenHash: string;
  /** How the session's user signed in: every access token of the family says so. */
  via: SignInMethod | null;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
}

/**
 * One link of a refresh-token family. The opaque token is shown once; only its SHA-256 is
 * stored. Each use retires the link and issues the next one in the same family.
 */
export class RefreshToken {
  private constructor(readonly props: Readonly<RefreshTokenProps>) {}

  static issue(input: {
    userId: string;
    organizationId: string;
    familyId?: string;
    credentialsVersion: number;
    ttlSeconds: number;
    via?: SignInMethod | null;
  }): {
    token: string;
    record: RefreshToken;
  } {
    const token = `rt_${randomBytes(32).toString('base64url')}`;
    const now = new Date();
    const record = new RefreshToken({
      id: randomUUID(),
      userId: input.userId,
      organizationId: input.organizationId,
      familyId: input.familyId ?? randomUUID(),
      credentialsVersion: input.credentialsVersion,
      tokenHash: RefreshToken.hash(token),
      via: input.via ?? null,
      expiresAt: new Date(now.getTime() + input.ttlSeconds * 1000),
      usedAt: null,
      revokedAt: null,
      createdAt: now,
    });
    return { token, record };
  }

  static rehydrate(props: RefreshTokenProps): RefreshToken {
    return new RefreshToken({ ...props });
  }

  static hash(token: string): string {
    return createHash('sha256').update(token).digest('hex');
  }

  get alreadyUsed(): boolean {
    return this.props.usedAt !== null;
  }

  isActive(now = new Date()): boolean {
    return this.props.revokedAt === null && this.props.usedAt === null && this.props.expiresAt > now;
  }
}
