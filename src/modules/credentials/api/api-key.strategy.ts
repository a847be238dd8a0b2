import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import { Principal } from '../../../shared/auth/principal';
import { ApiKeyAuthenticator } from '../application/api-key-authenticator';

/** `Authorization: Bearer plat_…`: the passport strategy the auth guard picks for API keys. */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(Strategy, 'api-key') {
  constructor(private readonly authenticator: ApiKeyAuthenticator) {
    super();
  }

  validate(token: string): Promise<Principal> {
    return this.authenticator.authenticate(token);
  }
}
