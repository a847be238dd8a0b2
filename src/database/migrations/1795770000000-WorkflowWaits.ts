import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steps that wait (a sleep, a retry's next attempt, a child run) keep when they go on and the
 * child they wait for; skipped steps keep why; a map step's items are records of their own; a
 * run started by a workflow step keeps its parent and its depth.
 */
export class WorkflowWaits1795770000000 implements MigrationInterface {
  name = 'WorkflowWaits1795770000000';
  // CREATE INDEX CONCURRENTLY: runs go on while the parent index builds.
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "resume_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "reason" character varying(500)`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "child_run_id" uuid`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "parent_run_id" uuid`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "depth" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "workflow_runs_parent_idx" ON "workflow_runs" ("parent_run_id") WHERE parent_run_id IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_run_items" ("run_id" uuid NOT NULL, "step_id" character varying(64) NOT NULL, "index" integer NOT NULL, "status" character varying(16) NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "output" jsonb, "error" jsonb, "execution_id" uuid, "resume_at" TIMESTAMP(3) WITH TIME ZONE, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_workflow_run_items" PRIMARY KEY ("run_id", "step_id", "index"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_run_items" ADD CONSTRAINT "FK_workflow_run_items_run" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "workflow_run_items"`);
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."workflow_runs_parent_idx"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "depth"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "parent_run_id"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "child_run_id"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "reason"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "resume_at"`);
  }
}
