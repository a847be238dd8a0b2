import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { Principal } from '../../../shared/auth/principal';
import { ApiKeyAuthenticator } from '../application/api-key-authenticator';

/**
 * `Authorization: Bearer plat_…`: the passport strategy the auth guard picks for API keys. It
 * hands the client address over (as Express reads it, with TRUST_PROXY), which failures count by.
 */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(Strategy, 'api-key') {
  constructor(private readonly authenticator: ApiKeyAuthenticator) {
    super({ passReqToCallback: true });
  }

  validate(req: Request, token: string): Promise<Principal> {
    return this.authenticator.authenticate(token, req.ip ?? 'unknown');
  }
}
