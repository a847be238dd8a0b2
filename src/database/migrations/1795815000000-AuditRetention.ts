import { MigrationInterface, QueryRunner } from 'typeorm';

/** The role that may call the purge (`audit_purge`) and do nothing else; it logs in nowhere (a DBA may grant it to a login of theirs). */
export const AUDIT_PURGER_ROLE = 'platform_audit_purger';

/**
 * Audit retention: each organization's days (`audit_settings`), and the purge.
 *
 * Events leave the log only through `audit_purge(organization, max_days, limit)`. (It was first
 * owned by `platform_audit_purger`, the role the trigger let delete; that failed on PostgreSQL 15
 * for a migrating role that is not a superuser, since the new owner needs CREATE on the schema.
 * It is now the migrating role's, and AuditChainKey decides who may delete and what.) The
 * function removes the oldest events of the organization's chain, never one younger than its retention (at least 30 days, at most `max_days`, the
 * instance's cap), and records on the chain's head where the chain now starts and the hash it
 * continues from, so the check of the chain still finds an event removed from its beginning.
 *
 * The role is the cluster's: created when missing (the migration needs the right to create
 * roles), kept on the way down, since other databases of the cluster may use it.
 */
export class AuditRetention1795815000000 implements MigrationInterface {
  name = 'AuditRetention1795815000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "audit_settings" ("organization_id" uuid NOT NULL, "retention_days" integer NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_audit_settings" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" ADD "purged_through" bigint NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" ADD "purged_hash" character(64)`);
    // A role created beforehand (by a DBA, for a migrating role that may not create roles) is
    // taken as it is: CREATE ROLE checks the right to create roles before it finds the name taken.
    await queryRunner.query(`
      DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${AUDIT_PURGER_ROLE}') THEN
          CREATE ROLE ${AUDIT_PURGER_ROLE} NOLOGIN;
        END IF;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
      END $$`);
    await queryRunner.query(`
      DO $$ BEGIN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO ${AUDIT_PURGER_ROLE}', current_schema());
      END $$`);
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
    await queryRunner.query(`
      CREATE FUNCTION audit_purge(p_organization uuid, p_max_days integer, p_limit integer)
      RETURNS TABLE (purged integer, through_sequence bigint, older_than timestamptz, retention_days integer)
      LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
      DECLARE
        v_days integer;
        v_cutoff timestamptz;
        v_from bigint;
        v_first_kept bigint;
        v_through bigint;
        v_hash character(64);
        v_count integer;
      BEGIN
        SELECT s.retention_days INTO v_days FROM audit_settings s WHERE s.organization_id = p_organization;
        v_days := GREATEST(LEAST(COALESCE(v_days, p_max_days), p_max_days), 30);
        v_cutoff := now() - make_interval(days => v_days);
        SELECT h.purged_through INTO v_from FROM audit_chain_heads h WHERE h.organization_id = p_organization FOR UPDATE;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 0, 0::bigint, v_cutoff, v_days;
          RETURN;
        END IF;
        -- The chain goes from its oldest end, up to the first event that is to be kept.
        SELECT min(e.sequence) INTO v_first_kept FROM audit_events e
         WHERE e.organization_id = p_organization AND e.sequence > v_from AND e.sequence <= v_from + p_limit
           AND e.occurred_at >= v_cutoff;
        IF v_first_kept IS NOT NULL THEN
          v_through := v_first_kept - 1;
        ELSE
          SELECT max(e.sequence) INTO v_through FROM audit_events e
           WHERE e.organization_id = p_organization AND e.sequence > v_from AND e.sequence <= v_from + p_limit;
        END IF;
        IF v_through IS NULL OR v_through <= v_from THEN
          RETURN QUERY SELECT 0, v_from, v_cutoff, v_days;
          RETURN;
        END IF;
        SELECT e.hash INTO v_hash FROM audit_events e WHERE e.organization_id = p_organization AND e.sequence = v_through;
        DELETE FROM audit_events e WHERE e.organization_id = p_organization AND e.sequence > v_from AND e.sequence <= v_through;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        UPDATE audit_chain_heads h SET purged_through = v_through, purged_hash = v_hash WHERE h.organization_id = p_organization;
        RETURN QUERY SELECT v_count, v_through, v_cutoff, v_days;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION audit_purge(uuid, integer, integer)`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(`REVOKE ALL ON "audit_events", "audit_chain_heads" FROM ${AUDIT_PURGER_ROLE}`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" DROP COLUMN "purged_hash"`);
    await queryRunner.query(`ALTER TABLE "audit_chain_heads" DROP COLUMN "purged_through"`);
    await queryRunner.query(`DROP TABLE "audit_settings"`);
    await queryRunner.query(`
      DO $$ BEGIN
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM ${AUDIT_PURGER_ROLE}', current_schema());
      END $$`);
  }
}
