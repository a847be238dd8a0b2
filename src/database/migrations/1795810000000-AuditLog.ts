import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log (`audit_events`) and each organization's chain head, and how a session's user
 * signed in (`refresh_tokens.via`, for the audit log's actor). The table is append-only
 * whoever connects: a trigger refuses every DELETE and TRUNCATE, and every UPDATE but the one
 * that seals an unsealed event (sets its sequence and hashes, and nothing else). A superuser
 * can still switch the trigger off; the hash chain shows what was changed then.
 */
export class AuditLog1795810000000 implements MigrationInterface {
  name = 'AuditLog1795810000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "audit_events" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "occurred_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "actor" jsonb NOT NULL, "actor_id" character varying(64), "action" character varying(64) NOT NULL, "target" jsonb, "target_id" character varying(200), "outcome" character varying(16) NOT NULL, "request_id" character varying(128), "changes" jsonb, "sequence" bigint, "previous_hash" character(64), "hash" character(64), CONSTRAINT "audit_events_pkey" PRIMARY KEY ("organization_id", "occurred_at", "id"))`,
    );
    await queryRunner.query(`CREATE INDEX "audit_events_unsealed_idx" ON "audit_events" ("id") WHERE hash IS NULL`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "audit_events_chain_key" ON "audit_events" ("organization_id", "sequence") WHERE sequence IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "audit_events_action_idx" ON "audit_events" ("organization_id", "action", "occurred_at", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_events_target_idx" ON "audit_events" ("organization_id", "target_id", "occurred_at", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_events_actor_idx" ON "audit_events" ("organization_id", "actor_id", "occurred_at", "id")`);
    await queryRunner.query(
      `CREATE TABLE "audit_chain_heads" ("organization_id" uuid NOT NULL, "sequence" bigint NOT NULL, "hash" character(64) NOT NULL, CONSTRAINT "PK_76862318793ab1d6f246a06d630" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.hash IS NULL AND NEW.hash IS NOT NULL
           AND (NEW.id, NEW.organization_id, NEW.occurred_at, NEW.actor, NEW.actor_id, NEW.action, NEW.target,
                NEW.target_id, NEW.outcome, NEW.request_id, NEW.changes)
               IS NOT DISTINCT FROM
               (OLD.id, OLD.organization_id, OLD.occurred_at, OLD.actor, OLD.actor_id, OLD.action, OLD.target,
                OLD.target_id, OLD.outcome, OLD.request_id, OLD.changes) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit events cannot be changed or removed (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON "audit_events" FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON "audit_events" FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`,
    );
    await queryRunner.query(`ALTER TABLE "refresh_tokens" ADD "via" character varying(8)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "via"`);
    await queryRunner.query(`DROP TABLE "audit_chain_heads"`);
    await queryRunner.query(`DROP TABLE "audit_events"`);
    await queryRunner.query(`DROP FUNCTION audit_events_append_only()`);
  }
}
