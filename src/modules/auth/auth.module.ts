import { createSecretKey } from 'node:crypto';
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { AppConfig } from '../../config/app-config';
import { OrganizationsModule } from '../organizations/organizations.module';
import { UsersModule } from '../users/users.module';
import { TierThrottlerGuard } from '../throttling/tier-throttler.guard';
import { AuthController } from './api/auth.controller';
import { AuthGuard } from './api/auth.guard';
import { JwtStrategy } from './api/jwt.strategy';
import { OidcController } from './api/oidc.controller';
import { RolesGuard } from './api/roles.guard';
import { SamlAcsGuard } from './api/saml-acs.guard';
import { SamlController } from './api/saml.controller';
import { SamlStrategy } from './api/saml.strategy';
import { AccessTokens } from './application/access-tokens';
import { AuthService } from './application/auth.service';
import { LoginCodes } from './application/login-codes';
import { LoginLimiter } from './application/login-limiter';
import { SamlLogoutService } from './application/saml-logout.service';
import { SamlSettingsService } from './application/saml-settings.service';
import { SamlSignInService } from './application/saml-sign-in.service';
import { SamlSpKeysService } from './application/saml-sp-keys.service';
import { OidcProviders } from './application/oidc-providers';
import { OidcSettingsService } from './application/oidc-settings.service';
import { OidcSignInService } from './application/oidc-sign-in.service';
import { SsoAccounts } from './application/sso-accounts';
import { OidcStore } from './domain/oidc.store';
import { RefreshTokenRepository } from './domain/refresh-token.repository';
import { SamlStore } from './domain/saml.store';
import { TypeOrmOidcStore } from './infrastructure/typeorm-oidc.store';
import { TypeOrmRefreshTokenRepository } from './infrastructure/typeorm-refresh-token.repository';
import { TypeOrmSamlStore } from './infrastructure/typeorm-saml.store';

@Module({
  imports: [
    UsersModule,
    OrganizationsModule,
    JwtModule.registerAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => {
        // A KeyObject built once: verifying with it is far cheaper than with a string secret.
        const key = createSecretKey(Buffer.from(config.jwt.secret, 'utf8'));
        const { issuer, audience, accessTtlSeconds } = config.jwt;
        return {
          secret: key,
          signOptions: { algorithm: 'HS256', issuer, audience, expiresIn: accessTtlSeconds },
          verifyOptions: { algorithms: ['HS256'], issuer, audience },
        };
      },
    }),
  ],
  controllers: [AuthController, SamlController, OidcController],
  providers: [
    AuthService,
    AccessTokens,
    LoginLimiter,
    SamlSettingsService,
    SamlSignInService,
    SamlSpKeysService,
    SamlLogoutService,
    SamlStrategy,
    SamlAcsGuard,
    SsoAccounts,
    LoginCodes,
    OidcProviders,
    OidcSettingsService,
    OidcSignInService,
    { provide: OidcStore, useClass: TypeOrmOidcStore },
    { provide: RefreshTokenRepository, useClass: TypeOrmRefreshTokenRepository },
    { provide: SamlStore, useClass: TypeOrmSamlStore },
    JwtStrategy,
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: RolesGuard },
    // After the two above (global guards run in the order they are provided): counts per organization.
    { provide: APP_GUARD, useClass: TierThrottlerGuard },
  ],
  exports: [AuthService, AccessTokens],
})
export class AuthModule {}
