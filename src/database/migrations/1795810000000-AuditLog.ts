import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log, and how a session's user signed in (`refresh_tokens.via`, for its actor).
 *
 * An event is written with its change into `audit_inbox` (one index: the request pays for
 * little), then moved by the sealer, with its place in its organization's chain, into
 * `audit_events` (indexed for the lists), and `audit_chain_heads` records where each chain ends.
 * Whoever connects, the service's own role included:
 * - `audit_events` is append-only: a trigger refuses every UPDATE, DELETE and TRUNCATE;
 * - `audit_inbox` refuses UPDATE and TRUNCATE, and a DELETE of an event that is not in
 *   `audit_events` yet: an event leaves it only once it is in the log.
 * A superuser can still switch the triggers off; the hash chain shows what was changed then.
 */
export class AuditLog1795810000000 implements MigrationInterface {
  name = 'AuditLog1795810000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    const content = `"id" uuid NOT NULL, "organization_id" uuid NOT NULL, "occurred_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "actor" jsonb NOT NULL, "actor_id" character varying(64), "action" character varying(64) NOT NULL, "target" jsonb, "target_id" character varying(200), "outcome" character varying(16) NOT NULL, "request_id" character varying(128), "changes" jsonb`;
    await queryRunner.query(`CREATE TABLE "audit_inbox" (${content}, CONSTRAINT "audit_inbox_pkey" PRIMARY KEY ("id"))`);
    await queryRunner.query(
      `CREATE TABLE "audit_events" (${content}, "sequence" bigint NOT NULL, "previous_hash" character(64) NOT NULL, "hash" character(64) NOT NULL, CONSTRAINT "audit_events_pkey" PRIMARY KEY ("organization_id", "occurred_at", "id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "audit_events_chain_key" ON "audit_events" ("organization_id", "sequence")`);
    await queryRunner.query(`CREATE INDEX "audit_events_action_idx" ON "audit_events" ("organization_id", "action", "occurred_at", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_events_target_idx" ON "audit_events" ("organization_id", "target_id", "occurred_at", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_events_actor_idx" ON "audit_events" ("organization_id", "actor_id", "occurred_at", "id")`);
    await queryRunner.query(
      `CREATE TABLE "audit_chain_heads" ("organization_id" uuid NOT NULL, "sequence" bigint NOT NULL, "hash" character(64) NOT NULL, CONSTRAINT "PK_76862318793ab1d6f246a06d630" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON "audit_events" FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON "audit_events" FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`,
    );
    await queryRunner.query(`
      CREATE FUNCTION audit_inbox_until_sealed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND EXISTS (
          SELECT 1 FROM audit_events e
           WHERE e.organization_id = OLD.organization_id AND e.occurred_at = OLD.occurred_at AND e.id = OLD.id) THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER audit_inbox_until_sealed BEFORE UPDATE OR DELETE ON "audit_inbox" FOR EACH ROW EXECUTE FUNCTION audit_inbox_until_sealed()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER audit_inbox_no_truncate BEFORE TRUNCATE ON "audit_inbox" FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`,
    );
    await queryRunner.query(`ALTER TABLE "refresh_tokens" ADD "via" character varying(8)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "via"`);
    await queryRunner.query(`DROP TABLE "audit_chain_heads"`);
    await queryRunner.query(`DROP TABLE "audit_events"`);
    await queryRunner.query(`DROP TABLE "audit_inbox"`);
    await queryRunner.query(`DROP FUNCTION audit_inbox_until_sealed()`);
    await queryRunner.query(`DROP FUNCTION audit_events_append_only()`);
  }
}
