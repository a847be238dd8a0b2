import { DataSource } from 'typeorm';
import { AuditEventsService } from '../src/modules/audit/application/audit-events.service';
import { timeOrderedId } from '../src/shared/ids/time-ordered-id';
import { withKey } from './support/api-keys';
import { expectError } from './support/envelope';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';

const DAY_MS = 86_400_000;
/** The instance's cap in this spec. */
const CAP_DAYS = 400;

interface Listed {
  action: string;
  occurredAt: string;
  actor: { type: string; name: string | null };
  changes: { before?: Record<string, unknown>; after?: Record<string, unknown> } | null;
}

/**
 * Audit retention: each enterprise organization's days (30 to the instance's cap), and the
 * purge that removes older events through the one database role allowed to, records itself,
 * and leaves a chain that still verifies. The app runs as an API process, so nothing is sealed
 * or purged but by the spec: events written in the past can be sealed ahead of the present ones.
 */
describe('audit retention', () => {
  let t: TestApp;
  let db: DataSource;
  let service: AuditEventsService;

  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ROLE: 'api', AUDIT_RETENTION_DAYS: String(CAP_DAYS) } });
    db = t.app.get(DataSource);
    service = t.app.get(AuditEventsService);
  });

  afterAll(() => t.close());

  const settings = (org: TestOrg) => t.http().get('/api/audit-events/settings').set(bearer(org.admin));
  const setRetention = (org: TestOrg, retentionDays: unknown) =>
    t.http().put('/api/audit-events/settings').set(bearer(org.admin)).send({ retentionDays });
  const listed = async (org: TestOrg, query = ''): Promise<Listed[]> => {
    const res = await t.http().get(`/api/audit-events?limit=100${query}`).set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body.data as Listed[];
  };
  const verify = async (org: TestOrg) => {
    const res = await t.http().get('/api/audit-events/verify').set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body as { valid: boolean; checked: number; unsealed: number; firstBreak: { reason: string } | null };
  };

  /** Events `daysAgo` in the past, written straight into the inbox the way the service writes them. */
  async function writtenAgo(org: TestOrg, ...daysAgo: number[]): Promise<void> {
    for (const days of daysAgo) {
      const at = Date.now() - days * DAY_MS;
      await db.query(
        `INSERT INTO audit_inbox (id, organization_id, occurred_at, actor, actor_id, action, target, target_id, outcome, request_id, changes)
         VALUES ($1, $2, $3, $4, NULL, 'agent.created', $5, NULL, 'success', NULL, NULL)`,
        [
          timeOrderedId(at),
          org.id,
          new Date(at),
          JSON.stringify({ type: 'system', id: null, name: 'system', ip: null, userAgent: null, via: null }),
          JSON.stringify({ type: 'agent', id: null, name: `${days} days ago` }),
        ],
      );
    }
  }

  const seal = (org: TestOrg) => t.run(() => service.sealPending(org.id));
  const purge = () => t.run(() => service.purgeExpired());
  const olderThan = async (org: TestOrg, days: number): Promise<number> => {
    const [{ count }] = await db.query(
      `SELECT count(*)::int AS count FROM audit_events WHERE organization_id = $1 AND occurred_at < now() - make_interval(days => $2)`,
      [org.id, days],
    );
    return count;
  };

  it("starts at the instance's cap, and takes 30 days up to the cap from a signed-in admin, recorded", async () => {
    const org = await t.newOrg('enterprise');
    expect((await settings(org)).body).toEqual({ retentionDays: CAP_DAYS, maxRetentionDays: CAP_DAYS });

    const changed = await setRetention(org, 30);
    expect({ status: changed.status, body: changed.body }).toEqual({ status: 200, body: { retentionDays: 30, maxRetentionDays: CAP_DAYS } });
    expect((await settings(org)).body).toEqual({ retentionDays: 30, maxRetentionDays: CAP_DAYS });
    expect((await setRetention(org, CAP_DAYS)).status).toBe(200);

    const [latest, first] = await listed(org, '&action=audit.settings_updated');
    expect(first).toMatchObject({ actor: { type: 'user', name: org.admin.email }, changes: { before: { retentionDays: CAP_DAYS }, after: { retentionDays: 30 } } });
    expect(latest.changes).toEqual({ before: { retentionDays: 30 }, after: { retentionDays: CAP_DAYS } });
  });

  it('refuses fewer than 30 days, more than the cap, and what is not a whole number', async () => {
    const org = await t.newOrg('enterprise');
    for (const days of [29, CAP_DAYS + 1, 90.5, '90', null]) expectError(await setRetention(org, days), 400, 'VALIDATION_FAILED', 'retentionDays');
    expect((await settings(org)).body.retentionDays).toBe(CAP_DAYS);
    expect(await listed(org, '&action=audit.settings_updated')).toEqual([]);
  });

  it('is for enterprise admins: other tiers, members and API keys are refused', async () => {
    const team = await t.newOrg('team');
    expectError(await settings(team), 403, 'FEATURE_NOT_AVAILABLE');
    expectError(await setRetention(team, 60), 403, 'FEATURE_NOT_AVAILABLE');

    const org = await t.newOrg('enterprise');
    expectError(await t.http().put('/api/audit-events/settings').set(bearer(org.member)).send({ retentionDays: 60 }), 403, 'FORBIDDEN');
    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'siem', role: 'admin' });
    const issued = await t.http().post(`/api/service-accounts/${account.body.id}/api-keys`).set(bearer(org.admin)).send({ name: 'k' });
    expect(issued.status).toBe(201);
    expect((await t.http().get('/api/audit-events/settings').set(withKey(issued.body.key))).status).toBe(200);
    expectError(await t.http().put('/api/audit-events/settings').set(withKey(issued.body.key)).send({ retentionDays: 60 }), 403, 'FORBIDDEN');
    expect((await settings(org)).body.retentionDays).toBe(CAP_DAYS);
  });

  it('purges the events past the retention, records the purge, and the chain still verifies', async () => {
    const org = await t.newOrg('enterprise');
    await writtenAgo(org, 120, 90, 45);
    expect((await setRetention(org, 60)).status).toBe(200);
    await seal(org);
    const before = await verify(org);
    expect(before).toMatchObject({ valid: true, unsealed: 0 });

    await purge();

    expect(await olderThan(org, 60)).toBe(0);
    expect(await olderThan(org, 44)).toBe(1);
    const [purged] = await listed(org, '&action=audit.purged');
    expect(purged).toMatchObject({
      actor: { type: 'system', name: 'system' },
      changes: { after: { purged: 2, throughSequence: 2, retentionDays: 60, olderThan: expect.any(String) } },
    });
    const [head] = await db.query('SELECT purged_through FROM audit_chain_heads WHERE organization_id = $1', [org.id]);
    expect(Number(head.purged_through)).toBe(2);

    // The purge's own event joins the chain; the two purged ones are no longer walked.
    expect(await verify(org)).toEqual({ valid: true, checked: before.checked - 2 + 1, unsealed: 0, firstBreak: null });

    // A second pass finds nothing more to purge, and records nothing.
    await purge();
    expect(await listed(org, '&action=audit.purged')).toHaveLength(1);
  });

  it("keeps an organization's events for the instance's cap when it set none", async () => {
    const org = await t.newOrg('enterprise');
    await writtenAgo(org, CAP_DAYS + 5, CAP_DAYS - 5);
    await seal(org);
    await purge();
    expect(await olderThan(org, CAP_DAYS)).toBe(0);
    expect(await olderThan(org, CAP_DAYS - 10)).toBe(1);
    expect((await listed(org, '&action=audit.purged'))[0].changes!.after).toMatchObject({ purged: 1, retentionDays: CAP_DAYS });
  });

  it("refuses the service's own connection any delete, and its purge never goes under 30 days", async () => {
    const org = await t.newOrg('enterprise');
    await writtenAgo(org, 40, 20);
    await seal(org);
    await expect(db.query('DELETE FROM audit_events WHERE organization_id = $1', [org.id])).rejects.toThrow(
      /audit events cannot be changed or removed/,
    );
    // Called directly with a 1-day cap, the purge still keeps 30 days.
    const [result] = await db.query('SELECT * FROM audit_purge($1, 1, 100)', [org.id]);
    expect(result).toMatchObject({ purged: 1, retention_days: 30 });
    expect(await olderThan(org, 30)).toBe(0);
    expect(await olderThan(org, 10)).toBe(1);
    // A purge that was not recorded as an event shows in the chain's check.
    expect(await verify(org)).toMatchObject({ valid: false, firstBreak: { sequence: 1 } });
  });

  it('names a chain whose start was moved without a recorded purge', async () => {
    const org = await t.newOrg('enterprise');
    await writtenAgo(org, 100, 90);
    await seal(org);
    await db.query('UPDATE audit_chain_heads SET purged_through = 1 WHERE organization_id = $1', [org.id]);
    expect(await verify(org)).toMatchObject({
      valid: false,
      firstBreak: { sequence: 1, reason: 'the chain begins after event 1, but the last recorded purge ended at 0' },
    });
  });

  it('purges each organization by its own retention only', async () => {
    const short = await t.newOrg('enterprise');
    const long = await t.newOrg('enterprise');
    await writtenAgo(short, 50);
    await writtenAgo(long, 50);
    expect((await setRetention(short, 30)).status).toBe(200);
    await seal(short);
    await seal(long);
    await purge();
    expect(await olderThan(short, 45)).toBe(0);
    expect(await olderThan(long, 45)).toBe(1);
    expect(await listed(long, '&action=audit.purged')).toEqual([]);
  });
});
