import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A retried run or execution names its retry (`retried_by`, set once), and the retry names what
 * it retries (`retry_of`). Nullable columns without defaults: adding them rewrites no rows.
 */
export class RunRetries1795780000000 implements MigrationInterface {
  name = 'RunRetries1795780000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "retry_of" uuid`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "retried_by" uuid`);
    await queryRunner.query(`ALTER TABLE "agent_executions" ADD "retry_of" uuid`);
    await queryRunner.query(`ALTER TABLE "agent_executions" ADD "retried_by" uuid`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agent_executions" DROP COLUMN "retried_by"`);
    await queryRunner.query(`ALTER TABLE "agent_executions" DROP COLUMN "retry_of"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "retried_by"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "retry_of"`);
  }
}
