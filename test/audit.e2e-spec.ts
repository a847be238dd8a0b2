import { DataSource } from 'typeorm';
import { AuditEventsService } from '../src/modules/audit/application/audit-events.service';
import { install, registerAgent } from './support/agents';
import { withKey } from './support/api-keys';
import { expectError } from './support/envelope';
import { eventually } from './support/eventually';
import { bearer, createTestApp, TestApp, TestOrg } from './support/test-app';
import { Receiver } from './support/webhook-receiver';

const UPPERCASE = { kind: 'transform.jsonata', config: { expression: '$uppercase(text)' } };

/**
 * The audit log through the API: the events an agent's changes write (actor, address, user
 * agent, request id, what changed), the filters and pages, the hash chain and its check, and
 * that the rows cannot be changed from the service's own connection.
 */
describe('audit log', () => {
  let t: TestApp;
  let db: DataSource;

  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await createTestApp({ env: { OUTBOUND_ALLOWLIST: '127.0.0.1' } });
    db = t.app.get(DataSource);
  });

  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const events = (org: TestOrg, query = '') => t.http().get(`/api/audit-events${query}`).set(bearer(org.admin));
  const verify = (org: TestOrg) => t.http().get('/api/audit-events/verify').set(bearer(org.admin));

  /** An organization with the transform plugin and one agent, created, renamed and deleted by its admin. */
  async function orgWithHistory(): Promise<{ org: TestOrg; agentId: string }> {
    const org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    const agentId = await registerAgent(t, org, { ...UPPERCASE, name: 'upper' });
    const patched = await t
      .http()
      .patch(`/api/agents/${agentId}`)
      .set(bearer(org.admin))
      .set({ 'User-Agent': 'audit-spec/1.0', 'X-Request-Id': 'audit-spec-rename' })
      .send({ name: 'shout', description: 'Upper-cases text' });
    expect(patched.status).toBe(200);
    return { org, agentId };
  }

  it("records an agent's changes with who made them, from where, and what changed", async () => {
    const { org, agentId } = await orgWithHistory();
    expect((await t.http().delete(`/api/agents/${agentId}`).set(bearer(org.admin))).status).toBe(204);

    const res = await events(org, `?targetId=${agentId}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { action: string }) => e.action)).toEqual(['agent.deleted', 'agent.updated', 'agent.created']);
    const [deleted, updated, created] = res.body.data;
    expect(updated).toMatchObject({
      organizationId: org.id,
      actor: { type: 'user', id: org.admin.id, name: org.admin.email, userAgent: 'audit-spec/1.0', ip: expect.any(String) },
      action: 'agent.updated',
      target: { type: 'agent', id: agentId, name: 'shout' },
      outcome: 'success',
      requestId: 'audit-spec-rename',
      changes: { before: { name: 'upper', description: '' }, after: { name: 'shout', description: 'Upper-cases text' } },
    });
    expect(created.changes).toEqual({
      after: expect.objectContaining({ name: 'upper', kind: 'transform.jsonata', config: UPPERCASE.config }),
    });
    expect(created.changes.after.createdAt).toBeUndefined();
    expect(deleted.changes).toEqual({ before: expect.objectContaining({ name: 'shout' }) });
    expect(Date.parse(deleted.occurredAt)).toBeGreaterThanOrEqual(Date.parse(created.occurredAt));
  });

  it('names the API key that made a change, and filters by action, actor and time, page by page', async () => {
    const { org, agentId } = await orgWithHistory();
    const account = await t.http().post('/api/service-accounts').set(bearer(org.admin)).send({ name: 'deployer', role: 'admin' });
    const issued = await t.http().post(`/api/service-accounts/${account.body.id}/api-keys`).set(bearer(org.admin)).send({ name: 'ci' });
    expect(issued.status).toBe(201);
    const byKey = await t.http().patch(`/api/agents/${agentId}`).set(withKey(issued.body.key)).send({ description: 'from CI' });
    expect(byKey.status).toBe(200);

    const updates = await events(org, '?action=agent.updated');
    expect(updates.body.data).toHaveLength(2);
    expect(updates.body.data[0].actor).toMatchObject({ type: 'api_key', id: issued.body.id, name: 'deployer', via: 'key' });
    const byActor = await events(org, `?actorId=${issued.body.id}`);
    expect(byActor.body.data.map((e: { action: string }) => e.action)).toContain('agent.updated');
    expect(byActor.body.data.every((e: { actor: { id: string } }) => e.actor.id === issued.body.id)).toBe(true);

    const first = await events(org, '?limit=2');
    expect(first.body.data).toHaveLength(2);
    const second = await events(org, `?limit=2&cursor=${first.body.nextCursor}`);
    const all = await events(org, '?limit=100');
    expect([...first.body.data, ...second.body.data].map((e: { id: string }) => e.id)).toEqual(
      all.body.data.slice(0, first.body.data.length + second.body.data.length).map((e: { id: string }) => e.id),
    );

    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await events(org, `?since=${future}`)).body.data).toEqual([]);
    expect((await events(org, `?until=${future}`)).body.data.length).toBe(all.body.data.length);
  });

  it('keeps each organization to its own events, and admins only', async () => {
    const { org, agentId } = await orgWithHistory();
    const other = await t.newOrg('enterprise');
    const theirs = (await events(other, '?limit=100')).body.data;
    expect(theirs.filter((e: { organizationId: string }) => e.organizationId !== other.id)).toEqual([]);
    expect((await events(other, `?targetId=${agentId}`)).body.data).toEqual([]);
    expectError(await t.http().get('/api/audit-events').set(bearer(org.member)), 403, 'FORBIDDEN');
    expectError(await t.http().get('/api/audit-events/verify').set(bearer(org.viewer)), 403, 'FORBIDDEN');
    expectError(await events(org, '?action=agent.exploded'), 400, 'VALIDATION_FAILED');
    expectError(await events(org, '?actorId=nope'), 400, 'VALIDATION_FAILED');
    expectError(await events(org, '?since=yesterday'), 400, 'VALIDATION_FAILED');
  });

  it('chains every event to the one before it, and names the first one changed behind its back', async () => {
    const { org } = await orgWithHistory();
    const check = await verify(org);
    expect(check.status).toBe(200);
    const sealed = (await events(org, '?limit=100')).body.data;
    expect(check.body).toEqual({ valid: true, checked: sealed.length, unsealed: 0, firstBreak: null });
    expect(sealed.map((e: { sequence: number }) => e.sequence)).toEqual(sealed.map((_: unknown, i: number) => sealed.length - i));
    expect(sealed[0].hash).toMatch(/^[0-9a-f]{64}$/);

    // A superuser edits the agent's rename with the trigger out of the way.
    const renamed = sealed.find((e: { action: string }) => e.action === 'agent.updated');
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL session_replication_role = replica`);
      await tx.query(`UPDATE audit_events SET actor = jsonb_set(actor, '{name}', '"someone-else"') WHERE id = $1`, [renamed.id]);
    });
    const broken = await verify(org);
    expect(broken.body).toEqual({
      valid: false,
      checked: renamed.sequence - 1,
      unsealed: 0,
      firstBreak: { sequence: renamed.sequence, eventId: renamed.id, reason: 'its content does not match its hash (it was changed)' },
    });
  });

  it('finds an event removed from the middle of the chain', async () => {
    const { org, agentId } = await orgWithHistory();
    expect((await t.http().delete(`/api/agents/${agentId}`).set(bearer(org.admin))).status).toBe(204);
    expect((await verify(org)).body).toMatchObject({ valid: true, unsealed: 0 });
    const [, middle] = (await events(org)).body.data;
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL session_replication_role = replica`);
      await tx.query(`DELETE FROM audit_events WHERE id = $1`, [middle.id]);
    });
    expect((await verify(org)).body).toEqual({
      valid: false,
      checked: middle.sequence - 1,
      unsealed: 0,
      firstBreak: { sequence: middle.sequence, eventId: null, reason: `event ${middle.sequence} is missing` },
    });
  });

  it('finds the newest events removed', async () => {
    const { org } = await orgWithHistory();
    expect((await verify(org)).body).toMatchObject({ valid: true, unsealed: 0 });
    const [newest] = (await events(org)).body.data;
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL session_replication_role = replica`);
      await tx.query(`DELETE FROM audit_events WHERE id = $1`, [newest.id]);
    });
    const n = newest.sequence;
    expect((await verify(org)).body).toEqual({
      valid: false,
      checked: n - 1,
      unsealed: 0,
      firstBreak: { sequence: n, eventId: null, reason: `events ${n} to ${n} are missing` },
    });
  });

  it("refuses to change or remove events through the service's own connection, sealed or not yet", async () => {
    const { org, agentId } = await orgWithHistory();
    const refused = /cannot be changed or removed/;
    // Not sealed yet: in the inbox, which lets an event go only once it is in the log.
    await t.http().patch(`/api/agents/${agentId}`).set(bearer(org.admin)).send({ description: 'pending' }).expect(200);
    const [pending] = await db.query<Array<{ id: string }>>(
      `SELECT id FROM audit_inbox WHERE organization_id = $1 AND target_id = $2 ORDER BY id DESC LIMIT 1`,
      [org.id, agentId],
    );
    expect(pending).toBeDefined();
    await expect(db.query(`UPDATE audit_inbox SET outcome = 'failure' WHERE id = $1`, [pending.id])).rejects.toThrow(refused);
    await expect(db.query(`DELETE FROM audit_inbox WHERE id = $1`, [pending.id])).rejects.toThrow(refused);
    await expect(db.query(`TRUNCATE audit_inbox`)).rejects.toThrow(refused);

    expect((await verify(org)).body).toMatchObject({ valid: true, unsealed: 0 });
    const [event] = (await events(org, `?targetId=${agentId}`)).body.data;
    expect(event).toMatchObject({ id: pending.id, sequence: expect.any(Number) });
    await expect(db.query(`UPDATE audit_events SET outcome = 'failure' WHERE id = $1`, [event.id])).rejects.toThrow(refused);
    await expect(db.query(`UPDATE audit_events SET hash = repeat('0', 64) WHERE id = $1`, [event.id])).rejects.toThrow(refused);
    await expect(db.query(`DELETE FROM audit_events WHERE id = $1`, [event.id])).rejects.toThrow(refused);
    await expect(db.query(`TRUNCATE audit_events`)).rejects.toThrow(refused);
    expect((await verify(org)).body.valid).toBe(true);
  });

  it('lists events at once, before they are sealed', async () => {
    const { org, agentId } = await orgWithHistory();
    const [newest] = (await events(org, `?targetId=${agentId}`)).body.data;
    expect(newest).toMatchObject({ action: 'agent.updated', sequence: null, hash: null });
    expect((await verify(org)).body.unsealed).toBe(0);
    expect((await events(org, `?targetId=${agentId}`)).body.data[0]).toMatchObject({ id: newest.id, sequence: expect.any(Number) });
  });

  it('exports every event the filters select, oldest first, as CSV and as JSON lines, and records the export', async () => {
    const org = await t.newOrg('enterprise');
    await install(t, org, 'transform');
    const agentId = await registerAgent(t, org, { ...UPPERCASE, name: '=HYPERLINK("x")' });
    await t
      .http()
      .patch(`/api/agents/${agentId}`)
      .set(bearer(org.admin))
      .send({ description: 'has "quotes", commas\nand a line' })
      .expect(200);
    const listed = (await events(org, `?targetId=${agentId}`)).body.data.reverse();

    const jsonl = await t.http().get(`/api/audit-events/export?format=jsonl&targetId=${agentId}`).set(bearer(org.admin));
    expect(jsonl.status).toBe(200);
    expect(jsonl.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(jsonl.headers['content-disposition']).toContain('audit-events.jsonl');
    const lines = jsonl.text
      .trimEnd()
      .split('\n')
      .map((line: string) => JSON.parse(line));
    expect(lines.map((e: { id: string }) => e.id)).toEqual(listed.map((e: { id: string }) => e.id));
    expect(lines[1]).toMatchObject({ action: 'agent.updated', changes: listed[1].changes });

    const csv = await t.http().get(`/api/audit-events/export?format=csv&targetId=${agentId}`).set(bearer(org.admin));
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const [header, ...records] = csv.text.split('\r\n').filter(Boolean);
    expect(header.split(',')).toEqual(expect.arrayContaining(['id', 'occurredAt', 'actorId', 'action', 'targetName', 'changes', 'hash']));
    expect(records).toHaveLength(listed.length);
    // A name a spreadsheet would run as a formula is quoted and prefixed; quotes are doubled.
    expect(records[0]).toContain(`"'=HYPERLINK(""x"")"`);
    expect(csv.text).toContain('has \\""quotes\\"", commas');

    const exports = (await events(org, '?action=audit.exported')).body.data;
    expect(exports.map((e: { target: { name: string } }) => e.target.name).sort()).toEqual(['csv', 'jsonl']);
    expect(exports[0]).toMatchObject({ actor: { id: org.admin.id }, changes: { after: { targetId: agentId } } });
    expectError(await t.http().get('/api/audit-events/export?format=xml').set(bearer(org.admin)), 400, 'VALIDATION_FAILED');
    expectError(await t.http().get('/api/audit-events/export').set(bearer(org.admin)), 400, 'VALIDATION_FAILED');
  });

  it('gives the audit log by tier: none on starter, the last 90 days on team, all of it with export and the check on enterprise', async () => {
    const starter = await t.newOrg('starter');
    expectError(await events(starter), 403, 'FEATURE_NOT_AVAILABLE');

    const team = await t.newOrg('team');
    await install(t, team, 'transform');
    const old = { id: '00000000-0000-7000-8000-000000000001', occurredAt: new Date(Date.now() - 100 * 86_400_000) };
    await db.query(
      `INSERT INTO audit_inbox (id, organization_id, occurred_at, actor, action, outcome) VALUES ($1, $2, $3, '{"type":"system"}', 'agent.created', 'success')`,
      [old.id, team.id, old.occurredAt],
    );
    const seen = (await events(team, '?limit=100')).body.data;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.map((e: { id: string }) => e.id)).not.toContain(old.id);
    expect(
      (await events(team, `?since=${old.occurredAt.toISOString()}&limit=100`)).body.data.map((e: { id: string }) => e.id),
    ).not.toContain(old.id);
    expectError(await verify(team), 403, 'FEATURE_NOT_AVAILABLE');
    expectError(await t.http().get('/api/audit-events/export?format=csv').set(bearer(team.admin)), 403, 'FEATURE_NOT_AVAILABLE');
  });

  it('streams sealed events to webhook endpoints that subscribe to audit.* (enterprise), and not to those on *', async () => {
    const hook = async (org: TestOrg, path: string, eventTypes: string[]) =>
      expect(
        (
          await t
            .http()
            .post('/api/webhooks')
            .set(bearer(org.admin))
            .send({ url: receiver.url(path), eventTypes })
        ).status,
      ).toBe(201);
    const { org, agentId } = await orgWithHistory();
    await hook(org, '/audit', ['audit.*']);
    await hook(org, '/everything', ['*']);
    const team = await t.newOrg('team');
    await hook(team, '/team-audit', ['audit.*']);
    await t.http().post('/api/plugins/transform/install').set(bearer(team.admin)).send({ config: {} }).expect(201);

    await t.http().patch(`/api/agents/${agentId}`).set(bearer(org.admin)).send({ description: 'streamed' }).expect(200);
    // Sealing (a verify seals what is pending) sends them.
    expect((await verify(org)).body.valid).toBe(true);
    await t.app.get(AuditEventsService).sealPending();
    const streamed = await eventually(
      () => {
        const bodies = receiver.on('/audit').map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });
        return (
          bodies.some(
            (b) =>
              b.type === 'audit.agent.updated' &&
              (b.data.changes as { after?: { description?: string } })?.after?.description === 'streamed',
          ) && bodies
        );
      },
      { message: "the rename's audit event at the endpoint" },
    );
    const update = streamed.find((b) => b.type === 'audit.agent.updated' && JSON.stringify(b.data).includes('streamed'))!;
    const listed = (await events(org, `?targetId=${agentId}&action=agent.updated`)).body.data[0];
    expect(update.data).toEqual(listed);
    expect(streamed.map((b) => b.type)).toContain('audit.agent.created');
    expect(receiver.on('/everything').filter((r) => JSON.parse(r.body).type.startsWith('audit.'))).toEqual([]);
    expect(receiver.on('/team-audit')).toEqual([]);
  });
});
