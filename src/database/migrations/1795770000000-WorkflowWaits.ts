import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steps that wait (a sleep, a retry's next attempt) keep when they go on; skipped steps keep why;
 * a map step's items are records of their own.
 */
export class WorkflowWaits1795770000000 implements MigrationInterface {
  name = 'WorkflowWaits1795770000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "resume_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "reason" character varying(500)`);
    await queryRunner.query(
      `CREATE TABLE "workflow_run_items" ("run_id" uuid NOT NULL, "step_id" character varying(64) NOT NULL, "index" integer NOT NULL, "status" character varying(16) NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "output" jsonb, "error" jsonb, "execution_id" uuid, "resume_at" TIMESTAMP(3) WITH TIME ZONE, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_workflow_run_items" PRIMARY KEY ("run_id", "step_id", "index"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_run_items" ADD CONSTRAINT "FK_workflow_run_items_run" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "workflow_run_items"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "reason"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "resume_at"`);
  }
}
