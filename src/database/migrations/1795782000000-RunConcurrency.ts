import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runs of a workflow with `concurrency` keep their key, the limit they were started with, and
 * whether they wait for a place (queued on no job); their index counts a key's places.
 */
export class RunConcurrency1795782000000 implements MigrationInterface {
  name = 'RunConcurrency1795782000000';
  // CREATE INDEX CONCURRENTLY: runs go on while the index builds.
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "concurrency_key" character varying(200)`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "concurrency_limit" integer`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "waits_for_place" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "workflow_runs_concurrency_idx" ON "workflow_runs" ("workflow_id", "concurrency_key", "waits_for_place", "created_at") WHERE concurrency_key IS NOT NULL AND status IN ('queued', 'running', 'waiting')`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."workflow_runs_concurrency_idx"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "waits_for_place"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "concurrency_limit"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "concurrency_key"`);
  }
}
