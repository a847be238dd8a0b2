import { ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { DomainError } from '../../../shared/errors/domain-error';
import { SamlSignedIn } from '../application/saml-sign-in.service';
import { weakAlgorithm } from '../domain/saml-checks';
import { samlInvalid } from '../domain/saml.errors';
import { SAML_STRATEGY } from './saml.strategy';

/**
 * The ACS route: passport-saml validates the posted response (signature, issuer, audience,
 * destination, times, InResponseTo) and the strategy's verify step signs the user in. Every
 * failure becomes 401 SAML_INVALID with a safe message, logged with the organization and the
 * reason (never the assertion).
 */
@Injectable()
export class SamlAcsGuard extends AuthGuard(SAML_STRATEGY) {
  private readonly logger = new Logger('Saml');

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    const response = (req.body as { SAMLResponse?: unknown } | undefined)?.SAMLResponse;
    if (typeof response !== 'string' || !response) throw this.refuse(req, 'The request carries no SAMLResponse');
    const weak = weakAlgorithm(response);
    if (weak) throw this.refuse(req, weak);
    return (await super.canActivate(context)) as boolean;
  }

  override handleRequest<T>(error: unknown, result: Partial<SamlSignedIn> | false, info: unknown, context: ExecutionContext): T {
    const req = context.switchToHttp().getRequest<Request>();
    if (error instanceof DomainError && error.code !== 'SAML_INVALID') throw error;
    if (error instanceof DomainError) throw this.refuse(req, error.message, error.message);
    if (error || !result || !result.user) {
      const reason = error instanceof Error ? error.message : info instanceof Error ? info.message : 'validation failed';
      throw this.refuse(req, reason);
    }
    return result as T;
  }

  private refuse(req: Request, reason: string, shown = 'The SAML response is not valid'): DomainError {
    this.logger.warn({ msg: 'SAML sign-in refused', organization: req.params.org, reason });
    return samlInvalid(shown);
  }
}
