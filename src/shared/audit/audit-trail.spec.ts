import { changedFields, redacted } from './audit-trail';

describe('audit changes', () => {
  it('redacts every field whose name says it holds a secret, at any depth, and keeps the rest', () => {
    const value = {
      name: 'crm',
      apiKey: 'sk-1',
      config: { baseUrl: 'https://x.test', headers: { Authorization: 'Bearer t', accept: 'json' }, clientSecret: 's' },
      users: [{ email: 'a@b.test', password: 'p' }],
      refreshToken: 'rt',
      key: 'k',
      keyId: 'kept',
      notSet: null,
      at: new Date(0),
    };
    expect(redacted(value)).toEqual({
      name: 'crm',
      apiKey: '[redacted]',
      config: { baseUrl: 'https://x.test', headers: { Authorization: '[redacted]', accept: 'json' }, clientSecret: '[redacted]' },
      users: [{ email: 'a@b.test', password: '[redacted]' }],
      refreshToken: '[redacted]',
      key: '[redacted]',
      keyId: 'kept',
      notSet: null,
      at: new Date(0),
    });
  });

  it('keeps only the fields that changed, each side with its own value, whatever the key order', () => {
    expect(
      changedFields(
        { name: 'a', config: { x: 1, y: 2 }, tags: ['p'], gone: true, createdAt: new Date(0) },
        { name: 'b', config: { y: 2, x: 1 }, tags: ['p'], added: 3, createdAt: new Date(1) },
      ),
    ).toEqual({ before: { name: 'a', gone: true, added: undefined }, after: { name: 'b', gone: undefined, added: 3 } });
    expect(changedFields({ name: 'a' }, { name: 'a' })).toEqual({ before: {}, after: {} });
  });
});
