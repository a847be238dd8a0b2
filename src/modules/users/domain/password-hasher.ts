/** Port for password hashing, so the domain does not know the algorithm. */
export abstract class PasswordHasher {
  abstract hash(password: string): Promise<string>;
  abstract verify(hash: string, password: string): Promise<boolean>;
  /** Spends the same time as a failed verify, for unknown users. */
  abstract verifyDummy(password: string): Promise<false>;
}
