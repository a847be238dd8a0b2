import { DomainError } from '../../../shared/errors/domain-error';
import { ApiKey, expiryOf } from './api-key';
import { hashKey } from './key-secret';

const NOW = new Date('2026-11-26T12:00:00Z');
const DAY = 86_400_000;

function refused(work: () => unknown): DomainError {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error('expected a refusal');
}

describe('expiryOf', () => {
  it('defaults to 90 days, or the cap when it is shorter', () => {
    expect(expiryOf(undefined, null, NOW)).toEqual(new Date(NOW.getTime() + 90 * DAY));
    expect(expiryOf(undefined, 30, NOW)).toEqual(new Date(NOW.getTime() + 30 * DAY));
  });

  it('takes a future date within the cap, and refuses a past one or one beyond the cap naming expiresAt', () => {
    const inTenDays = new Date(NOW.getTime() + 10 * DAY);
    expect(expiryOf(inTenDays, 30, NOW)).toEqual(inTenDays);
    expect(refused(() => expiryOf(new Date(NOW.getTime() - 1), null, NOW)).details).toEqual([
      { path: 'expiresAt', message: 'expiresAt must be in the future' },
    ]);
    expect(refused(() => expiryOf(new Date(NOW.getTime() + 31 * DAY), 30, NOW)).code).toBe('VALIDATION_FAILED');
  });

  it('allows no expiry only without a cap', () => {
    expect(expiryOf(null, null, NOW)).toBeNull();
    expect(refused(() => expiryOf(null, 30, NOW)).code).toBe('VALIDATION_FAILED');
  });
});

describe('ApiKey', () => {
  const issue = () =>
    ApiKey.issue({
      organizationId: 'o',
      owner: { type: 'service_account', id: 's' },
      name: 'k',
      scopes: ['agents:read', 'agents:read'],
      expiresAt: null,
      ownerVersion: 0,
    });

  it('keeps the hash of its secret and never the secret; scopes without repeats', () => {
    const { key, secret } = issue();
    expect(key.toProps()).toMatchObject({ hash: hashKey(secret), scopes: ['agents:read'], displayPrefix: secret.slice(0, 12) });
    expect(JSON.stringify(key.toProps())).not.toContain(secret);
  });

  it('rotates to a new secret, keeping the old hash for the grace window only when there is one', () => {
    const { key, secret } = issue();
    const next = key.rotate(60, NOW);
    expect(key.toProps()).toMatchObject({
      hash: hashKey(next),
      previousHash: hashKey(secret),
      previousExpiresAt: new Date(NOW.getTime() + 60_000),
    });
    key.rotate(0, NOW);
    expect(key.toProps()).toMatchObject({ previousHash: null, previousExpiresAt: null });
  });

  it('cannot be rotated once revoked', () => {
    const { key } = issue();
    key.revoke(NOW);
    expect(refused(() => key.rotate(60)).code).toBe('API_KEY_NOT_FOUND');
  });
});
