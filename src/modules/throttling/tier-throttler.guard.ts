import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Principal } from '../../shared/auth/principal';
import { RateLimits } from './rate-limits';

/**
 * Global, after the JWT and roles guards: every authenticated request counts against its
 * organization's budget for the window (every user and token of an organization share it;
 * two organizations behind one IP never do), at the limit of the organization's current
 * tier, with the `RateLimit*` headers on every authenticated response; over the limit, 429
 * with `Retry-After`. Unauthenticated routes keep their own limits (login, inbound hooks).
 */
@Injectable()
export class TierThrottlerGuard implements CanActivate {
  constructor(private readonly limits: RateLimits) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const principal = http.getRequest<Request & { principal?: Principal }>().principal;
    if (!principal) return true;
    const { headers, refused } = await this.limits.organization(principal.organizationId);
    http.getResponse<Response>().set(headers);
    if (refused) throw refused;
    return true;
  }
}
