import { AppConfig } from '../../config/app-config';
import { OrganizationShares, Shares } from './organization-shares';

const LOW: Shares = { expressions: 50, executions: 40, runs: 40, deliveries: 40, schedules: 100 };
const HIGH: Shares = { expressions: 100, executions: 75, runs: 75, deliveries: 75, schedules: 5000 };

function sharesWith(overrides: AppConfig['shareOverrides'] = {}): OrganizationShares {
  const shares = new OrganizationShares({ shareOverrides: overrides } as AppConfig);
  const tiers: Record<string, string> = { small: 'low', big: 'high' };
  shares.use({ tierOf: (id) => Promise.resolve(tiers[id] ?? 'unknown'), byTier: { default: LOW, low: LOW, high: HIGH } });
  return shares;
}

describe('OrganizationShares', () => {
  it("gives an organization its tier's percentage of a capacity, at least one, and its tier's schedule count", async () => {
    const shares = sharesWith();
    await expect(shares.limit('small', 'executions', 64)).resolves.toBe(26);
    await expect(shares.limit('big', 'executions', 64)).resolves.toBe(48);
    await expect(shares.limit('small', 'expressions', 1)).resolves.toBe(1);
    await expect(shares.limit('big', 'schedules')).resolves.toBe(5000);
    // An organization whose tier the policy does not list gets the default share.
    await expect(shares.limit('stranger', 'runs', 32)).resolves.toBe(13);
    await expect(shares.group('big')).resolves.toEqual({ id: 'big', tier: 'high' });
  });

  it("lets the operator's count stand for every tier", async () => {
    const shares = sharesWith({ executions: 5, schedules: 3 });
    await expect(shares.limit('big', 'executions', 64)).resolves.toBe(5);
    await expect(shares.limit('small', 'schedules')).resolves.toBe(3);
    await expect(shares.limit('small', 'runs', 32)).resolves.toBe(13);
  });

  it("puts an organization's jobs behind others' once it sent many lately, and forgets after the window", () => {
    const shares = sharesWith();
    const t0 = 1_000_000;
    const backlog = Array.from({ length: 100 }, () => shares.priority('busy', 1, t0));
    expect(backlog.slice(0, 16)).toEqual(Array(16).fill(0));
    expect(backlog[16]).toBe(-1);
    expect(backlog[99]).toBe(-6);
    // Another organization's single job keeps the top priority.
    expect(shares.priority('quiet', 1, t0 + 100)).toBe(0);
    // A batch counts as its jobs.
    expect(shares.priority('outbox', 40, t0 + 200)).toBe(0);
    expect(shares.priority('outbox', 1, t0 + 300)).toBe(-2);
    // Counted over the last 10 to 20 s: a window later, still behind; two windows later, forgotten.
    expect(shares.priority('busy', 1, t0 + 12_000)).toBe(-6);
    expect(shares.priority('busy', 1, t0 + 45_000)).toBe(0);
  });

  it("gives a worker room beyond its base so that the top tier's share is the base, and caps each tier's share of it", () => {
    // The top share is 75 %: 128 / 0.75 = 171 slots (rounded up); an organization of it holds 129, one of the low tier 69.
    expect(sharesWith().workerSlots('deliveries', 128)).toEqual({
      capacity: 171,
      limits: { default: 69, tiers: { default: 69, low: 69, high: 129 } },
    });
    // An operator's count: the base, and the count for every tier.
    expect(sharesWith({ deliveries: 100 }).workerSlots('deliveries', 128)).toEqual({
      capacity: 128,
      limits: { default: 100, tiers: { default: 100, low: 100, high: 100 } },
    });
  });
});
