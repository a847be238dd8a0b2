import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AuditEventsService } from '../../src/modules/audit/application/audit-events.service';
import { chainHash } from '../../src/modules/audit/domain/audit-chain';
import { AuditEvent } from '../../src/modules/audit/domain/audit-event';
import { timeOrderedId } from '../../src/shared/ids/time-ordered-id';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

const PURGER = 'platform_audit_purger';
const DAY_MS = 86_400_000;

/**
 * The audit log holds against the service's own database role. On a database of its own, owned
 * by a migrating role that is no superuser and may not create roles (`platform_audit_purger`
 * created beforehand, as docs/operating.md tells a DBA to), the service runs with
 * DATABASE_MIGRATION_URL set to that role and DATABASE_URL to a role of its own. As the
 * service's role, every way to change the log is refused; someone with the database's superuser
 * who rewrites an event and relinks the chain with plain SHA-256 is found by `verify`; the purge
 * role removes nothing inside the retention.
 */
describe('audit log against the database roles', () => {
  const suffix = randomBytes(4).toString('hex');
  const owner = `audit_owner_${suffix}`;
  const serviceRole = `audit_service_${suffix}`;
  const database = `audit_roles_${suffix}`;
  const server = new URL(process.env.TEST_SERVER_DATABASE_URL!);
  const urlOf = (user: string | null) => {
    const url = new URL(server.toString());
    if (user) url.username = user;
    url.pathname = `/${database}`;
    return url.toString();
  };
  let superuser: Client;
  let t: TestApp;
  let db: DataSource;
  let org: TestOrg;

  /** As the server's superuser, on the spec's database. */
  const asSuperuser = (sql: string, params: unknown[] = []) => superuser.query(sql, params).then((r) => r.rows);

  beforeAll(async () => {
    const admin = new Client({ connectionString: server.toString() });
    await admin.connect();
    await admin.query(`CREATE ROLE ${owner} LOGIN NOSUPERUSER NOCREATEROLE`);
    await admin.query(`CREATE ROLE ${serviceRole} LOGIN NOSUPERUSER NOCREATEROLE`);
    // The migrating role may act as the service's, to hand it its tables; not the other way round.
    await admin.query(`GRANT ${serviceRole} TO ${owner}`);
    await admin.query(
      `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${PURGER}') THEN CREATE ROLE ${PURGER} NOLOGIN; END IF; END $$`,
    );
    await admin.query(`CREATE DATABASE ${database} OWNER ${owner}`);
    await admin.end();
    superuser = new Client({ connectionString: urlOf(null) });
    await superuser.connect();
    t = await createTestApp({ env: { APP_ROLE: 'api', DATABASE_URL: urlOf(serviceRole), DATABASE_MIGRATION_URL: urlOf(owner) } });
    db = t.app.get(DataSource);
  });

  beforeEach(async () => {
    org = await t.newOrg('enterprise');
  });

  afterAll(async () => {
    await t?.close();
    await superuser?.end();
    const admin = new Client({ connectionString: server.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${serviceRole}`);
    await admin.query(`DROP ROLE IF EXISTS ${owner}`);
    await admin.end();
  });

  const verify = async () => {
    const res = await t.http().get('/api/audit-events/verify').set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body as { valid: boolean; checked: number; firstBreak: { sequence: number; eventId: string | null; reason: string } | null };
  };
  /** A few changes, each an event, sealed. */
  const history = async () => {
    for (const description of ['one', 'two', 'three']) {
      await t
        .http()
        .put('/api/audit-events/settings')
        .set(bearer(org.admin))
        .send({ retentionDays: 30 + description.length })
        .expect(200);
    }
    expect(await verify()).toMatchObject({ valid: true, firstBreak: null });
  };

  it('migrates as a role that may not create roles, with the purge role created beforehand, and keeps the log its own', async () => {
    const owners = await asSuperuser(
      `SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner FROM pg_class c
        WHERE c.relname IN ('audit_events', 'audit_inbox', 'audit_chain_heads', 'audit_settings', 'agents', 'migrations') ORDER BY c.relname`,
    );
    expect(owners).toEqual([
      { name: 'agents', owner: serviceRole },
      { name: 'audit_chain_heads', owner },
      { name: 'audit_events', owner },
      { name: 'audit_inbox', owner },
      { name: 'audit_settings', owner },
      { name: 'migrations', owner },
    ]);
    const [purge] = await asSuperuser(`SELECT pg_get_userbyid(proowner) AS owner, prosecdef FROM pg_proc WHERE proname = 'audit_purge'`);
    expect(purge).toEqual({ owner, prosecdef: true });
    const [{ member }] = await asSuperuser(`SELECT pg_has_role($1, $2, 'USAGE') OR pg_has_role($1, $3, 'USAGE') AS member`, [
      serviceRole,
      PURGER,
      owner,
    ]);
    expect(member).toBe(false);
  });

  it("refuses, as the service's role, to switch the trigger off, update, delete or truncate the log", async () => {
    await history();
    const [event] = await db.query(`SELECT id FROM audit_events WHERE organization_id = $1 LIMIT 1`, [org.id]);
    await expect(db.query(`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`)).rejects.toThrow(
      /must be owner of table audit_events/,
    );
    await expect(db.query(`ALTER TABLE audit_events DISABLE TRIGGER ALL`)).rejects.toThrow(/must be owner of table audit_events/);
    await expect(db.query(`UPDATE audit_events SET outcome = 'failure' WHERE id = $1`, [event.id])).rejects.toThrow(
      /permission denied for table audit_events/,
    );
    await expect(db.query(`DELETE FROM audit_events WHERE id = $1`, [event.id])).rejects.toThrow(
      /permission denied for table audit_events/,
    );
    await expect(db.query(`TRUNCATE audit_events`)).rejects.toThrow(/permission denied for table audit_events/);
    await expect(db.query(`UPDATE audit_chain_heads SET purged_through = 1 WHERE organization_id = $1`, [org.id])).rejects.toThrow(
      /permission denied for table audit_chain_heads/,
    );
    await expect(db.query(`SET ROLE ${owner}`)).rejects.toThrow(/permission denied to set role/);
    await expect(db.query(`SET ROLE ${PURGER}`)).rejects.toThrow(/permission denied to set role/);
    const [{ count }] = await asSuperuser(`SELECT count(*)::int AS count FROM audit_events WHERE id = $1 AND outcome = 'success'`, [
      event.id,
    ]);
    expect(count).toBe(1);
    expect(await verify()).toMatchObject({ valid: true, firstBreak: null });
  });

  it('finds an event rewritten, and the chain relinked with plain SHA-256, by someone with the database alone', async () => {
    await history();
    const rows = await asSuperuser(`SELECT * FROM audit_events WHERE organization_id = $1 ORDER BY sequence`, [org.id]);
    const target = rows[1];
    // The superuser rewrites the second event and relinks everything after it, as the chain was linked before it was keyed.
    await asSuperuser('BEGIN');
    await asSuperuser(`SET LOCAL session_replication_role = replica`);
    let previousHash: string = target.previous_hash;
    for (const row of rows.slice(1)) {
      const event: Omit<AuditEvent, 'hash' | 'previousHash'> & { sequence: number } = {
        id: row.id,
        organizationId: row.organization_id,
        occurredAt: row.occurred_at,
        actor: row === target ? { ...row.actor, name: 'someone-else' } : row.actor,
        action: row.action,
        target: row.target,
        outcome: row.outcome,
        requestId: row.request_id,
        changes: row.changes,
        sequence: Number(row.sequence),
      };
      const hash = chainHash(previousHash, event, null);
      await asSuperuser(`UPDATE audit_events SET actor = $2, previous_hash = $3, hash = $4 WHERE id = $1`, [
        row.id,
        event.actor,
        previousHash,
        hash,
      ]);
      previousHash = hash;
    }
    await asSuperuser(`UPDATE audit_chain_heads SET hash = $2 WHERE organization_id = $1`, [org.id, previousHash]);
    await asSuperuser('COMMIT');
    const check = await verify();
    expect(check).toMatchObject({
      valid: false,
      firstBreak: { sequence: Number(target.sequence), eventId: target.id, reason: 'its content does not match its hash (it was changed)' },
    });
  });

  it('lets the purge role remove nothing inside the retention, and the service purge only what is past it', async () => {
    await history();
    const count = async (organizationId: string) =>
      (await asSuperuser(`SELECT count(*)::int AS count FROM audit_events WHERE organization_id = $1`, [organizationId]))[0]
        .count as number;
    const before = await count(org.id);
    await asSuperuser('BEGIN');
    await asSuperuser(`SET LOCAL ROLE ${PURGER}`);
    await expect(superuser.query(`DELETE FROM audit_events WHERE organization_id = $1`, [org.id])).rejects.toThrow(
      /permission denied for table audit_events/,
    );
    await asSuperuser('ROLLBACK');
    await asSuperuser('BEGIN');
    await asSuperuser(`SET LOCAL ROLE ${PURGER}`);
    // Asked for the shortest retention there is: every event is younger, none goes.
    expect(await asSuperuser(`SELECT purged FROM audit_purge($1, 30, 1000)`, [org.id])).toEqual([{ purged: 0 }]);
    await asSuperuser('COMMIT');
    // The owner has DELETE, and the trigger still refuses an event inside the retention.
    const asOwner = new Client({ connectionString: urlOf(owner) });
    await asOwner.connect();
    try {
      await expect(asOwner.query(`DELETE FROM audit_events WHERE organization_id = $1`, [org.id])).rejects.toThrow(
        /cannot be changed or removed \(DELETE refused\)/,
      );
    } finally {
      await asOwner.end();
    }
    expect(await count(org.id)).toBe(before);

    // The service's hourly purge, as its own role, removes what is past the retention, and the chain still holds.
    const other = await t.newOrg('enterprise');
    await t.http().put('/api/audit-events/settings').set(bearer(other.admin)).send({ retentionDays: 30 }).expect(200);
    for (const at of [Date.now() - 40 * DAY_MS, Date.now() - 40 * DAY_MS + 1]) {
      await db.query(
        `INSERT INTO audit_inbox (id, organization_id, occurred_at, actor, action, outcome)
         VALUES ($1, $2, $3, '{"type":"system","id":null,"name":"system","ip":null,"userAgent":null,"via":null}', 'agent.created', 'success')`,
        [timeOrderedId(at), other.id, new Date(at)],
      );
    }
    const service = t.app.get(AuditEventsService);
    await service.sealPending(other.id);
    const sealed = await count(other.id);
    expect(await service.purgeExpired()).toBe(2);
    expect(await count(other.id)).toBe(sealed - 2);
    const res = await t.http().get('/api/audit-events/verify').set(bearer(other.admin));
    expect(res.body).toMatchObject({ valid: true, firstBreak: null });
  });
});
