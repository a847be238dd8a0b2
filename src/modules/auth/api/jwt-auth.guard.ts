import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { PUBLIC_KEY } from '../../../shared/auth/access.decorators';
import { Principal } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { UserRepository } from '../../users/domain/user.repository';
import { AccessTokens } from '../application/access-tokens';

/**
 * Global: every route needs a valid bearer token unless marked @Public(). The user is read
 * on each request, so a disabled or deleted user's tokens stop working at once, and a token
 * issued before the user's last password, role or status change (or logout) is refused.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: AccessTokens,
    private readonly users: UserRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, [context.getHandler(), context.getClass()])) return true;
    const request = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const [scheme, token] = (request.headers.authorization ?? '').split(' ');
    if (scheme?.toLowerCase() !== 'bearer' || !token) throw new DomainError('UNAUTHORIZED', 'A bearer token is required');
    const claims = await this.tokens.verify(token);
    const user = await this.users.findById(claims.org, claims.sub);
    if (!user?.canSignIn || user.credentialsVersion !== claims.ver) throw new DomainError('UNAUTHORIZED', 'The access token is not valid');
    request.principal = {
      userId: user.id,
      organizationId: user.organizationId,
      role: user.role,
      isOperator: user.isOperator,
      email: user.email,
    };
    return true;
  }
}
