import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  ANY_SCOPE_KEY,
  OPERATOR_KEY,
  OPERATORS_TOO_KEY,
  PUBLIC_KEY,
  ROLES_KEY,
  SCOPE_KEY,
  SESSION_ONLY_KEY,
} from '../../../shared/auth/access.decorators';
import { assertSession, Principal, Role } from '../../../shared/auth/principal';
import { Scope } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';

/**
 * Global, after the auth guard. Deny by default: a route that declares neither roles, the
 * operator flag nor @Public() is refused (and a test checks that none exists). A caller with
 * an API key is refused on @SessionOnly() routes, and a key with scopes needs the route's.
 */
@Injectable()
export class RolesGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;
    const principal = context.switchToHttp().getRequest<{ principal?: Principal }>().principal;
    if (!principal) throw new DomainError('UNAUTHORIZED', 'A bearer token is required');
    this.checkKey(principal, targets);
    if (this.reflector.getAllAndOverride<boolean>(OPERATOR_KEY, targets)) {
      if (principal.isOperator) return true;
      throw new DomainError('FORBIDDEN', 'Only instance operators may do this');
    }
    const roles = this.reflector.getAllAndOverride<Role[] | undefined>(ROLES_KEY, targets);
    if (roles?.includes(principal.role)) return true;
    if (principal.isOperator && this.reflector.getAllAndOverride<boolean>(OPERATORS_TOO_KEY, targets)) return true;
    throw new DomainError('FORBIDDEN', `The ${principal.role} role may not do this`);
  }

  private checkKey(principal: Principal, targets: Parameters<Reflector['getAllAndOverride']>[1]): void {
    const { credential } = principal;
    if (credential.type !== 'api_key') return;
    if (this.reflector.getAllAndOverride<boolean>(SESSION_ONLY_KEY, targets)) assertSession(principal);
    if (!credential.scopes) return;
    const anyOf = this.reflector.getAllAndOverride<Scope[] | undefined>(ANY_SCOPE_KEY, targets);
    if (anyOf) {
      if (anyOf.some((s) => credential.scopes!.includes(s))) return;
      throw new DomainError('FORBIDDEN', `The API key lacks every scope of: ${anyOf.join(', ')}`);
    }
    const scope = this.reflector.getAllAndOverride<Scope | undefined>(SCOPE_KEY, targets);
    if (!scope) throw new DomainError('FORBIDDEN', 'API keys with scopes cannot call this route');
    if (!credential.scopes.includes(scope)) throw new DomainError('FORBIDDEN', `The API key lacks the scope '${scope}'`);
  }
}
