import { MigrationInterface, QueryRunner } from 'typeorm';

/** GET /api/runs and GET /api/executions: an organization's newest first, keyset on (created_at, id). */
export class CrossListIndexes1795760000000 implements MigrationInterface {
  name = 'CrossListIndexes1795760000000';
  // CREATE INDEX CONCURRENTLY: writes go on while the indexes build.
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "workflow_runs_org_created_idx" ON "workflow_runs" ("organization_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "agent_executions_org_created_idx" ON "agent_executions" ("organization_id", "created_at", "id") `,
    );
  }

  // A revert is rare and short: a plain DROP INDEX (CONCURRENTLY would fail in the CLI's revert transaction).
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."agent_executions_org_created_idx"`);
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."workflow_runs_org_created_idx"`);
  }
}
