import { DomainError } from '../../../shared/errors/domain-error';

/** A failed SAML sign-in: 401 SAML_INVALID, with a message safe to show. */
export function samlInvalid(message: string): DomainError {
  return new DomainError('SAML_INVALID', message);
}
