import * as argon2 from 'argon2';
import { PasswordHasher } from '../domain/password-hasher';

/** What one hash costs: memory in KiB, passes, lanes. */
export interface Argon2Cost {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/** The library's defaults, what the service uses: m=64 MiB, t=3, p=4. */
export const PRODUCTION_COST: Argon2Cost = { memoryCost: 65_536, timeCost: 3, parallelism: 4 };

/**
 * argon2id. A hash carries its own cost, so a verify costs what the hash did; the e2e specs
 * hash their users cheaply (the service always at PRODUCTION_COST, a spec proves it).
 */
export class Argon2PasswordHasher extends PasswordHasher {
  private dummyHash?: Promise<string>;

  constructor(private readonly cost: Argon2Cost = PRODUCTION_COST) {
    super();
  }

  hash(password: string): Promise<string> {
    return argon2.hash(password, { type: argon2.argon2id, ...this.cost });
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  }

  async verifyDummy(password: string): Promise<false> {
    this.dummyHash ??= this.hash('dummy-password-for-timing');
    await argon2.verify(await this.dummyHash, password);
    return false;
  }
}
