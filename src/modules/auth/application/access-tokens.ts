import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Role, SignInMethod } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';

export interface AccessClaims {
  sub: string;
  org: string;
  role: Role;
  jti: string;
  /** The user's credentials version when issued. */
  ver: number;
  /** How the user signed in (absent from tokens issued before it was recorded). */
  via?: SignInMethod;
  iat: number;
  exp: number;
}

/**
 * Signs and verifies access tokens. HS256 is pinned on both sides and `iss`, `aud` and
 * `exp` are required, so `alg: none`, a foreign issuer or a token without expiry never pass.
 */
@Injectable()
export class AccessTokens {
  constructor(private readonly jwt: JwtService) {}

  sign(user: { id: string; organizationId: string; role: Role; credentialsVersion: number }, via: SignInMethod | null): Promise<string> {
    return this.jwt.signAsync(
      { org: user.organizationId, role: user.role, ver: user.credentialsVersion, ...(via ? { via } : {}) },
      { subject: user.id, jwtid: randomUUID() },
    );
  }

  async verify(token: string): Promise<AccessClaims> {
    let claims: Partial<AccessClaims>;
    try {
      claims = await this.jwt.verifyAsync<AccessClaims>(token);
    } catch (error) {
      if ((error as Error).name === 'TokenExpiredError') throw new DomainError('TOKEN_EXPIRED', 'The access token has expired');
      throw new DomainError('UNAUTHORIZED', 'The access token is not valid');
    }
    return checkedClaims(claims);
  }
}

/** The claims every access token must carry, typed; anything else is not a token of ours. */
export function checkedClaims(claims: Partial<AccessClaims>): AccessClaims {
  if (
    typeof claims.exp !== 'number' ||
    typeof claims.sub !== 'string' ||
    typeof claims.org !== 'string' ||
    typeof claims.ver !== 'number'
  ) {
    throw new DomainError('UNAUTHORIZED', 'The access token is not valid');
  }
  return claims as AccessClaims;
}
