import { MigrationInterface, QueryRunner } from 'typeorm';

export class WorkflowSchedules1795700370613 implements MigrationInterface {
  name = 'WorkflowSchedules1795700370613';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "workflow_schedules" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "workflow_id" uuid NOT NULL, "cron" character varying(200) NOT NULL, "timezone" character varying(100) NOT NULL, "input" jsonb, "overlap" character varying(8) NOT NULL, "catch_up" character varying(8) NOT NULL, "enabled" boolean NOT NULL, "next_fire_at" TIMESTAMP(3) WITH TIME ZONE, "last_fired_at" TIMESTAMP(3) WITH TIME ZONE, "last_run_id" uuid, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_6c4c2cd5ad440ed1f7cf34a4a28" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "workflow_schedules_due_idx" ON "workflow_schedules"  ("next_fire_at") WHERE enabled`);
    await queryRunner.query(
      `CREATE INDEX "workflow_schedules_workflow_created_idx" ON "workflow_schedules"  ("workflow_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_schedule_occurrences" ("id" BIGSERIAL NOT NULL, "schedule_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "scheduled_for" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "outcome" character varying(8) NOT NULL, "run_id" uuid, "at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_f95d50fd88ae81c39f17f612847" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_schedule_occurrences_schedule_idx" ON "workflow_schedule_occurrences"  ("schedule_id", "id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_schedules" ADD CONSTRAINT "FK_bccd6c5c1060bdc58fbc94956ca" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_schedules" ADD CONSTRAINT "FK_8347fda878908e52e2350ef978d" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_schedule_occurrences" ADD CONSTRAINT "FK_7993c66d31c06c5fe8cbb7d92db" FOREIGN KEY ("schedule_id") REFERENCES "workflow_schedules"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_schedule_occurrences" DROP CONSTRAINT "FK_7993c66d31c06c5fe8cbb7d92db"`);
    await queryRunner.query(`ALTER TABLE "workflow_schedules" DROP CONSTRAINT "FK_8347fda878908e52e2350ef978d"`);
    await queryRunner.query(`ALTER TABLE "workflow_schedules" DROP CONSTRAINT "FK_bccd6c5c1060bdc58fbc94956ca"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_schedule_occurrences_schedule_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_schedule_occurrences"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_schedules_workflow_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_schedules_due_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_schedules"`);
  }
}
