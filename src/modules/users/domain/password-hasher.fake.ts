import { PasswordHasher } from './password-hasher';

/** Not argon2: a readable stand-in with the same contract, for unit specs (a hash is `hashed:<password>`). */
export class FakePasswordHasher extends PasswordHasher {
  async hash(password: string): Promise<string> {
    return `hashed:${password}`;
  }

  async verify(hash: string, password: string): Promise<boolean> {
    return hash === `hashed:${password}`;
  }

  async verifyDummy(): Promise<false> {
    return false;
  }
}
