import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard as PassportGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { PUBLIC_KEY } from '../../../shared/auth/access.decorators';
import { setCredentialCheck } from '../../../shared/auth/credential-check';
import { Principal } from '../../../shared/auth/principal';
import { isApiKeyToken } from '../../../shared/auth/scopes';
import { DomainError } from '../../../shared/errors/domain-error';

/**
 * Global: every route needs a bearer credential unless marked @Public(). The token's shape
 * picks the strategy: an API key (`plat_…`) or an access token (JWT). The same check is left
 * on the request (setCredentialCheck), for a request that lasts (a live stream) to run again.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly strategies: Record<'jwt' | 'api-key', CanActivate> = { jwt: strategyGuard('jwt'), 'api-key': strategyGuard('api-key') };

  constructor(private readonly reflector: Reflector) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, [context.getHandler(), context.getClass()])) return true;
    const request = context.switchToHttp().getRequest<Request & { principal?: Principal; user?: Principal }>();
    const [scheme, token] = (request.headers.authorization ?? '').split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || !token) throw new DomainError('UNAUTHORIZED', 'A bearer token is required');
    const strategy = this.strategies[isApiKeyToken(token) ? 'api-key' : 'jwt'];
    await strategy.canActivate(context);
    request.principal = request.user;
    setCredentialCheck(request, async () => {
      await strategy.canActivate(context);
    });
    return true;
  }
}

/**
 * One passport strategy as a guard that keeps the service's error envelope: a strategy's own
 * error (a DomainError) passes through; a plain failure is 401, or TOKEN_EXPIRED for a JWT past
 * its `exp`.
 */
function strategyGuard(strategy: 'jwt' | 'api-key'): CanActivate {
  class StrategyGuard extends PassportGuard(strategy) {
    override handleRequest<T>(error: unknown, principal: T | false, info: unknown): T {
      if (error) throw error;
      if (principal) return principal;
      if ((info as Error | undefined)?.name === 'TokenExpiredError') throw new DomainError('TOKEN_EXPIRED', 'The access token has expired');
      throw new DomainError('UNAUTHORIZED', strategy === 'jwt' ? 'The access token is not valid' : 'The API key is not valid');
    }
  }
  return new StrategyGuard();
}
