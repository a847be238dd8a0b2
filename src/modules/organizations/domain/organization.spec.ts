import { DomainError } from '../../../shared/errors/domain-error';
import { Tier } from '../../licensing/domain/tiers';
import { Organization } from './organization';

describe('Organization', () => {
  it('accepts a lowercase slug and a known tier', () => {
    const org = Organization.create({ slug: 'acme-2', name: 'Acme', tier: 'team' });
    expect(org).toMatchObject({ slug: 'acme-2', tier: 'team', rateLimitPerMinute: null });
  });

  it.each(['Acme', '-acme', 'acme-', 'a_b', '', 'x'.repeat(64)])('refuses the slug %p', (slug) => {
    expect(() => Organization.create({ slug, name: 'x', tier: 'starter' })).toThrow(DomainError);
  });

  it('refuses an unknown tier', () => {
    expect(() => Organization.create({ slug: 'ok', name: 'x', tier: 'gold' as Tier })).toThrow(/Unknown tier/);
  });
});
