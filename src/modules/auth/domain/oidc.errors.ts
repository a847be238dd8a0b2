import { DomainError } from '../../../shared/errors/domain-error';

/** A refused OpenID Connect sign-in: 401 OIDC_INVALID, with a message safe to show. */
export function oidcInvalid(message: string): DomainError {
  return new DomainError('OIDC_INVALID', message);
}
