import { createSecretKey } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AppConfig } from '../../../config/app-config';
import { Principal, SignInMethod } from '../../../shared/auth/principal';
import { DomainError } from '../../../shared/errors/domain-error';
import { UserRepository } from '../../users/domain/user.repository';
import { AccessClaims, checkedClaims } from '../application/access-tokens';

/**
 * Access tokens (passport-jwt): HS256 pinned, `iss`, `aud` and `exp` required. The user is read
 * on each request, so a disabled or deleted user's tokens stop working at once, and a token
 * issued before the user's last password, role or status change (or logout) is refused.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    config: AppConfig,
    private readonly users: UserRepository,
  ) {
    const { secret, issuer, audience } = config.jwt;
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      // A KeyObject built once: verifying with it is far cheaper than with a string secret.
      secretOrKey: createSecretKey(Buffer.from(secret, 'utf8')) as unknown as string,
      algorithms: ['HS256'],
      issuer,
      audience,
      ignoreExpiration: false,
    });
  }

  async validate(payload: Partial<AccessClaims>): Promise<Principal> {
    const claims = checkedClaims(payload);
    const user = await this.users.findById(claims.org, claims.sub);
    if (!user?.canSignIn || user.credentialsVersion !== claims.ver) throw new DomainError('UNAUTHORIZED', 'The access token is not valid');
    return {
      userId: user.id,
      organizationId: user.organizationId,
      role: user.role,
      isOperator: user.isOperator,
      email: user.email,
      credential: { type: 'session', ...(isSignInMethod(claims.via) ? { via: claims.via } : {}) },
    };
  }
}

function isSignInMethod(value: unknown): value is SignInMethod {
  return value === 'password' || value === 'saml' || value === 'oidc';
}
