import { createHash, randomBytes } from 'node:crypto';
import { SignInMethod } from '../../../shared/auth/principal';

/** How long a one-time sign-in code lives. */
export const LOGIN_CODE_TTL_SECONDS = 60;

export interface LoginCodeProps {
  /** SHA-256 of the code; the code itself is never stored. */
  codeHash: string;
  userId: string;
  organizationId: string;
  /** How the user signed in: the code is exchanged only at that method's exchange route. */
  via: SignInMethod;
  /** The session (refresh-token family) the exchange starts, when the sign-in named one (SAML's, for single logout). */
  familyId?: string | null;
  expiresAt: Date;
}

/**
 * The one-time code a browser sign-in hands to the client (in the redirect), exchanged once
 * for a token pair within LOGIN_CODE_TTL_SECONDS.
 */
export class LoginCode {
  private constructor(readonly props: Readonly<LoginCodeProps>) {}

  static issue(
    input: { userId: string; organizationId: string; via: SignInMethod; familyId?: string | null },
    now = new Date(),
  ): { code: string; record: LoginCode } {
    const code = randomBytes(32).toString('base64url');
    const record = new LoginCode({
      codeHash: LoginCode.hash(code),
      userId: input.userId,
      organizationId: input.organizationId,
      via: input.via,
      familyId: input.familyId ?? null,
      expiresAt: new Date(now.getTime() + LOGIN_CODE_TTL_SECONDS * 1000),
    });
    return { code, record };
  }

  static rehydrate(props: LoginCodeProps): LoginCode {
    return new LoginCode({ ...props });
  }

  static hash(code: string): string {
    return createHash('sha256').update(code).digest('hex');
  }

  isLive(now = new Date()): boolean {
    return this.props.expiresAt > now;
  }
}
