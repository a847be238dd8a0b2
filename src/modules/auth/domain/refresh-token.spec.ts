import { RefreshToken } from './refresh-token';

describe('RefreshToken', () => {
  it('stores only the hash of the token it hands out', () => {
    const { token, record } = RefreshToken.issue({ userId: 'u', organizationId: 'o', credentialsVersion: 0, ttlSeconds: 60 });
    expect(token).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(record.props.tokenHash).toBe(RefreshToken.hash(token));
    expect(JSON.stringify(record.props)).not.toContain(token);
  });

  it('keeps the family on rotation and starts a new one otherwise', () => {
    const first = RefreshToken.issue({ userId: 'u', organizationId: 'o', credentialsVersion: 0, ttlSeconds: 60 }).record;
    const next = RefreshToken.issue({
      userId: 'u',
      organizationId: 'o',
      credentialsVersion: 0,
      ttlSeconds: 60,
      familyId: first.props.familyId,
    }).record;
    expect(next.props.familyId).toBe(first.props.familyId);
    expect(RefreshToken.issue({ userId: 'u', organizationId: 'o', credentialsVersion: 0, ttlSeconds: 60 }).record.props.familyId).not.toBe(
      first.props.familyId,
    );
  });

  it('is active only while unused, unrevoked and unexpired', () => {
    const { record } = RefreshToken.issue({ userId: 'u', organizationId: 'o', credentialsVersion: 0, ttlSeconds: 60 });
    expect(record.isActive()).toBe(true);
    expect(record.isActive(new Date(Date.now() + 61_000))).toBe(false);
    expect(RefreshToken.rehydrate({ ...record.props, usedAt: new Date() }).isActive()).toBe(false);
    expect(RefreshToken.rehydrate({ ...record.props, revokedAt: new Date() }).isActive()).toBe(false);
  });
});
