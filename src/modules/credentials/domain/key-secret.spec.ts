import { hashKey, KEY_PATTERN, newKeySecret, parseKey } from './key-secret';

describe('API key secrets', () => {
  it('makes keys of the published shape, with the kind in the prefix', () => {
    const sa = newKeySecret('service_account');
    const pk = newKeySecret('personal');
    expect(sa.key).toMatch(KEY_PATTERN);
    expect(sa.key.startsWith('plat_sa_')).toBe(true);
    expect(pk.key.startsWith('plat_pk_')).toBe(true);
    expect(sa.displayPrefix).toBe(sa.key.slice(0, 12));
    expect(sa.hash).toBe(hashKey(sa.key));
    expect(sa.hash).not.toContain(sa.key.slice(8));
  });

  it('accepts its own keys and refuses any changed character through the checksum', () => {
    const { key } = newKeySecret('personal');
    expect(parseKey(key)).toBe('personal');
    for (const at of [8, 30, key.length - 1]) {
      const changed = key.slice(0, at) + (key[at] === 'a' ? 'b' : 'a') + key.slice(at + 1);
      expect(parseKey(changed)).toBeNull();
    }
    expect(parseKey(`${key}x`)).toBeNull();
    expect(parseKey(key.replace('plat_pk_', 'plat_xx_'))).toBeNull();
  });

  it('never makes the same key twice', () => {
    const keys = new Set(Array.from({ length: 200 }, () => newKeySecret('service_account').key));
    expect(keys.size).toBe(200);
  });
});
