import { MigrationInterface, QueryRunner } from 'typeorm';

/** Steps that wait (a sleep, a retry's next attempt) keep when they go on; skipped steps keep why. */
export class WorkflowWaits1795770000000 implements MigrationInterface {
  name = 'WorkflowWaits1795770000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "resume_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" ADD "reason" character varying(500)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "reason"`);
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP COLUMN "resume_at"`);
  }
}
