import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { SecretBox } from './secret-box';

/**
 * One SecretBox per process, keyed by SECRETS_KEY, for every repository that seals a secret at
 * rest (plugin API keys, webhook and trigger secrets, SAML and OIDC keys).
 */
@Global()
@Module({
  providers: [{ provide: SecretBox, useFactory: (config: AppConfig) => new SecretBox(config.secretsKey), inject: [AppConfig] }],
  exports: [SecretBox],
})
export class CryptoModule {}
