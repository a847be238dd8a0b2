import { MigrationInterface, QueryRunner } from 'typeorm';
import { AUDIT_PURGER_ROLE } from './1795815000000-AuditRetention';

/**
 * The audit log holds against the service's own database role, and its chain is keyed.
 *
 * - The chain: each chain's head gets `keyed_from`, the first event linked with the chain key
 *   (HMAC-SHA256, a key the database does not hold), and `keyed_mac`, that start signed with the
 *   key. A chain begun before this migration is keyed from the event after its last one (the ones
 *   before keep their plain SHA-256 links, checked as such); the boot that runs this migration
 *   signs those starts. New chains are keyed from their first event.
 * - Deletion: the log's trigger lets a DELETE through only for an event older than its
 *   organization's retention (its own days, 30 at least), whoever runs it; no role has DELETE on
 *   the log but its owner. `audit_purge` belongs to the migrating role (SECURITY DEFINER) and only
 *   `platform_audit_purger` (and the service's role, granted at boot when it is another role) may
 *   run it; the purger role keeps no right on the tables.
 * The grants of the service's role, when it is not the migrating one, are made at boot after the
 * migrations (src/database/service-role.ts): the migrating role does not know it.
 */
export class AuditChainKey1795840000000 implements MigrationInterface {
  name = 'AuditChainKey1795840000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" ADD "keyed_from" bigint`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" ADD "keyed_mac" character(64)`);
    await queryRunner.query(`UPDATE "audit_chain_heads" SET "keyed_from" = "sequence" + 1`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit_events' AND OLD.occurred_at < now() - make_interval(days => GREATEST(
             COALESCE((SELECT s.retention_days FROM audit_settings s WHERE s.organization_id = OLD.organization_id), 30), 30)) THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(`REVOKE ALL ON "audit_events", "audit_chain_heads", "audit_settings" FROM ${AUDIT_PURGER_ROLE}`);
    await queryRunner.query(`ALTER FUNCTION audit_purge(uuid, integer, integer) OWNER TO CURRENT_USER`);
    await queryRunner.query(`REVOKE ALL ON FUNCTION audit_purge(uuid, integer, integer) FROM PUBLIC`);
    await queryRunner.query(`GRANT EXECUTE ON FUNCTION audit_purge(uuid, integer, integer) TO ${AUDIT_PURGER_ROLE}`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`GRANT EXECUTE ON FUNCTION audit_purge(uuid, integer, integer) TO PUBLIC`);
    await queryRunner.query(`GRANT SELECT, DELETE ON "audit_events" TO ${AUDIT_PURGER_ROLE}`);
    await queryRunner.query(`GRANT SELECT, UPDATE ON "audit_chain_heads" TO ${AUDIT_PURGER_ROLE}`);
    await queryRunner.query(`GRANT SELECT ON "audit_settings" TO ${AUDIT_PURGER_ROLE}`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit_events' AND current_user = '${AUDIT_PURGER_ROLE}' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" DROP COLUMN "keyed_mac"`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" DROP COLUMN "keyed_from"`);
  }
}
