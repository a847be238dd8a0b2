import type { Request } from 'express';

/**
 * Checks again that the credential a request came with still holds, as the auth guard checked
 * it (the key not revoked, expired or rotated out, its owner or the user not disabled, changed
 * or deleted, the access token not expired): throws the guard's refusal (a DomainError, 401)
 * when it no longer does, and whatever else went wrong (the database away) as it is.
 */
export type CredentialCheck = () => Promise<void>;

const CHECK = Symbol('credential check');
type Checked = Request & { [CHECK]?: CredentialCheck };

/** Set by the auth guard on each request it lets through. */
export function setCredentialCheck(req: Request, check: CredentialCheck): void {
  (req as Checked)[CHECK] = check;
}

/** The check the auth guard left on the request; none on a public route. */
export function credentialCheckOf(req: Request): CredentialCheck | undefined {
  return (req as Checked)[CHECK];
}
