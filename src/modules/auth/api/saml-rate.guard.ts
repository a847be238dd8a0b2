import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { LoginLimiter } from '../application/login-limiter';

/** Limits the public SAML routes per client address, before they touch the database. */
@Injectable()
export class SamlRateGuard implements CanActivate {
  constructor(private readonly limiter: LoginLimiter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    await this.limiter.ssoAttempt(context.switchToHttp().getRequest<Request>().ip ?? 'unknown');
    return true;
  }
}
