import { createHash } from 'node:crypto';

/** How long a sign-in started at the provider may take to come back. */
export const OIDC_LOGIN_TTL_MS = 10 * 60_000;

export interface OidcLoginProps {
  /** SHA-256 of the `state` sent to the provider; the state itself is not stored. */
  stateHash: string;
  organizationId: string;
  nonce: string;
  /** PKCE: the verifier whose S256 challenge went to the provider. */
  codeVerifier: string;
  /** Where the browser goes back to (an allowed redirect); null: the callback answers JSON. */
  redirect: string | null;
  expiresAt: Date;
}

/**
 * A sign-in sent to the provider and not yet answered: the state, nonce and PKCE verifier the
 * callback must match, stored so any instance can take the answer, and usable once.
 */
export class OidcLogin {
  private constructor(readonly props: Readonly<OidcLoginProps>) {}

  static start(input: Omit<OidcLoginProps, 'stateHash' | 'expiresAt'> & { state: string }, now = new Date()): OidcLogin {
    const { state, ...rest } = input;
    return new OidcLogin({ ...rest, stateHash: OidcLogin.hash(state), expiresAt: new Date(now.getTime() + OIDC_LOGIN_TTL_MS) });
  }

  static rehydrate(props: OidcLoginProps): OidcLogin {
    return new OidcLogin({ ...props });
  }

  static hash(state: string): string {
    return createHash('sha256').update(state).digest('hex');
  }
}
