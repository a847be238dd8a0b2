import { MigrationInterface, QueryRunner } from 'typeorm';

export class WorkflowTriggers1795708178671 implements MigrationInterface {
  name = 'WorkflowTriggers1795708178671';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "workflow_triggers" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "workflow_id" uuid NOT NULL, "name" character varying(100), "scheme" character varying(20) NOT NULL, "signature_header" character varying(100), "signature_encoding" character varying(8), "signature_prefix" character varying(32), "sealed_secrets" text NOT NULL, "mapping" text, "dedupe" character varying(16) NOT NULL, "dedupe_header" character varying(100), "response_mode" character varying(8) NOT NULL, "wait_seconds" integer NOT NULL, "workflow_version" integer, "enabled" boolean NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_80db6a92ba8ada13f99dd8e8839" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_triggers_workflow_created_idx" ON "workflow_triggers"  ("workflow_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_trigger_events" ("id" uuid NOT NULL, "trigger_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "source" character varying(64) NOT NULL, "status" character varying(8) NOT NULL, "run_id" uuid, "dedupe_key" character varying(200), "error" text, "replay_of" uuid, "headers" jsonb NOT NULL, "query" jsonb NOT NULL, "body" jsonb, CONSTRAINT "PK_f556b869dfdcb5d6a99f22b2705" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "workflow_trigger_events_created_idx" ON "workflow_trigger_events"  ("created_at") `);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "workflow_trigger_events_dedupe_key" ON "workflow_trigger_events"  ("trigger_id", "dedupe_key") WHERE dedupe_key IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_trigger_events_trigger_created_idx" ON "workflow_trigger_events"  ("trigger_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_triggers" ADD CONSTRAINT "FK_6775434cc67e783e4970d339f60" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_triggers" ADD CONSTRAINT "FK_a69d4dba42b12bffafa4be98044" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_trigger_events" ADD CONSTRAINT "FK_41810310276ba05741aaa7b44a2" FOREIGN KEY ("trigger_id") REFERENCES "workflow_triggers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_trigger_events" DROP CONSTRAINT "FK_41810310276ba05741aaa7b44a2"`);
    await queryRunner.query(`ALTER TABLE "workflow_triggers" DROP CONSTRAINT "FK_a69d4dba42b12bffafa4be98044"`);
    await queryRunner.query(`ALTER TABLE "workflow_triggers" DROP CONSTRAINT "FK_6775434cc67e783e4970d339f60"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_trigger_events_trigger_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_trigger_events_dedupe_key"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_trigger_events_created_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_trigger_events"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_triggers_workflow_created_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_triggers"`);
  }
}
