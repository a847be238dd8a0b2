import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AuditChainKey1795840000000 } from '../../src/database/migrations/1795840000000-AuditChainKey';
import { chainHash, GENESIS_HASH } from '../../src/modules/audit/domain/audit-chain';
import { bearer, createTestApp, TestApp, TestOrg } from '../support/test-app';

/**
 * A chain sealed before the chain was keyed (plain SHA-256 links) still verifies after the
 * upgrade: the boot that runs AuditChainKey signs where each such chain's keyed links begin,
 * the events sealed after are keyed, and a plain link rewritten afterwards is still found.
 * On a database of its own: the spec takes the schema back to before AuditChainKey.
 */
describe('audit chain begun before the key', () => {
  const database = `audit_chain_upgrade_${randomBytes(4).toString('hex')}`;
  const server = new URL(process.env.TEST_SERVER_DATABASE_URL!);
  const url = Object.assign(new URL(server.toString()), { pathname: `/${database}` }).toString();
  let t: TestApp;
  let org: TestOrg;
  let superuser: Client;

  const boot = () => createTestApp({ env: { APP_ROLE: 'api', DATABASE_URL: url } });
  const verify = async () => {
    const res = await t.http().get('/api/audit-events/verify').set(bearer(org.admin));
    expect(res.status).toBe(200);
    return res.body as { valid: boolean; checked: number; firstBreak: { sequence: number; reason: string } | null };
  };
  const changeRetention = async (retentionDays: number) =>
    t.http().put('/api/audit-events/settings').set(bearer(org.admin)).send({ retentionDays }).expect(200);

  beforeAll(async () => {
    const admin = new Client({ connectionString: server.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    superuser = new Client({ connectionString: url });
  });

  afterAll(async () => {
    await t?.close();
    await superuser.end();
    const admin = new Client({ connectionString: server.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('verifies the plain links, keys the ones after, and still finds a plain link rewritten', async () => {
    // An organization with a sealed chain, then the schema and the chain as they were before the key.
    t = await boot();
    org = await t.newOrg('enterprise');
    for (const days of [31, 32, 33]) await changeRetention(days);
    expect(await verify()).toMatchObject({ valid: true });
    const runner = t.app.get(DataSource).createQueryRunner();
    await runner.connect();
    await new AuditChainKey1795840000000().down(runner);
    await runner.query(`DELETE FROM migrations WHERE name = 'AuditChainKey1795840000000'`);
    await runner.release();
    await t.close();
    await superuser.connect();
    const rows = (await superuser.query(`SELECT * FROM audit_events WHERE organization_id = $1 ORDER BY sequence`, [org.id])).rows;
    await superuser.query('BEGIN');
    await superuser.query(`SET LOCAL session_replication_role = replica`);
    let previousHash = GENESIS_HASH;
    const plainPrevious: string[] = [];
    for (const row of rows) {
      plainPrevious.push(previousHash);
      const hash = chainHash(
        previousHash,
        {
          id: row.id,
          organizationId: row.organization_id,
          occurredAt: row.occurred_at,
          actor: row.actor,
          action: row.action,
          target: row.target,
          outcome: row.outcome,
          requestId: row.request_id,
          changes: row.changes,
          sequence: Number(row.sequence),
        },
        null,
      );
      await superuser.query(`UPDATE audit_events SET previous_hash = $2, hash = $3 WHERE id = $1`, [row.id, previousHash, hash]);
      previousHash = hash;
    }
    await superuser.query(`UPDATE audit_chain_heads SET hash = $2 WHERE organization_id = $1`, [org.id, previousHash]);
    await superuser.query('COMMIT');

    // The upgrade: this boot runs AuditChainKey and signs the chain's keyed start.
    t = await boot();
    expect(await verify()).toEqual({ valid: true, checked: rows.length, unsealed: 0, firstBreak: null });
    await changeRetention(34);
    expect(await verify()).toEqual({ valid: true, checked: rows.length + 1, unsealed: 0, firstBreak: null });
    const [head] = (await superuser.query(`SELECT keyed_from FROM audit_chain_heads WHERE organization_id = $1`, [org.id])).rows;
    expect(Number(head.keyed_from)).toBe(rows.length + 1);

    // A plain link rewritten, and relinked up to the keyed start: the start's signature is over the old hash.
    await superuser.query('BEGIN');
    await superuser.query(`SET LOCAL session_replication_role = replica`);
    const last = rows[rows.length - 1];
    const forged = chainHash(
      plainPrevious[rows.length - 1],
      {
        id: last.id,
        organizationId: last.organization_id,
        occurredAt: last.occurred_at,
        actor: { ...last.actor, name: 'someone-else' },
        action: last.action,
        target: last.target,
        outcome: last.outcome,
        requestId: last.request_id,
        changes: last.changes,
        sequence: Number(last.sequence),
      },
      null,
    );
    await superuser.query(`UPDATE audit_events SET actor = jsonb_set(actor, '{name}', '"someone-else"'), hash = $2 WHERE id = $1`, [
      last.id,
      forged,
    ]);
    await superuser.query(`UPDATE audit_events SET previous_hash = $2 WHERE organization_id = $1 AND sequence = $3`, [
      org.id,
      forged,
      rows.length + 1,
    ]);
    await superuser.query('COMMIT');
    expect((await verify()).firstBreak).toEqual({
      sequence: rows.length + 1,
      eventId: null,
      reason: `the chain's keyed start (event ${rows.length + 1}) is not signed with the chain key`,
    });
  });
});
