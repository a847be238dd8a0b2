import { Argon2PasswordHasher } from './argon2-password-hasher';

describe('Argon2PasswordHasher', () => {
  it('hashes with argon2id at the production cost by default (m=64 MiB, t=3, p=4)', async () => {
    const hash = await new Argon2PasswordHasher().hash('correct horse battery');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=65536,p=4,t=3\$/);
  });

  it('verifies a hash of any cost, the cost it carries, and refuses a wrong password or a malformed hash', async () => {
    const cheap = new Argon2PasswordHasher({ memoryCost: 1024, timeCost: 1, parallelism: 1 });
    const hash = await cheap.hash('correct horse battery');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=1024,p=1,t=1\$/);
    const production = new Argon2PasswordHasher();
    expect(await production.verify(hash, 'correct horse battery')).toBe(true);
    expect(await production.verify(hash, 'wrong horse battery')).toBe(false);
    expect(await production.verify('not-a-hash', 'correct horse battery')).toBe(false);
    expect(await production.verifyDummy('anything')).toBe(false);
  });
});
