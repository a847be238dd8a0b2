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

  it("keeps its history its tier's default days, or its own, never more than the instance's cap", () => {
    const org = Organization.create({ slug: 'acme', name: 'Acme', tier: 'team' });
    expect(org.historyRetention(90)).toBe(30);
    expect(org.historyRetention(14)).toBe(14);
    org.setHistoryRetention(60);
    expect(org.historyRetention(90)).toBe(60);
    expect(org.historyRetention(45)).toBe(45);
    org.setHistoryRetention(null);
    org.assignTier('enterprise');
    expect(org.historyRetention(365)).toBe(90);
  });
});
