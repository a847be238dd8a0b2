import { MigrationInterface, QueryRunner } from 'typeorm';

export class Workflows1795650867227 implements MigrationInterface {
  name = 'Workflows1795650867227';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "workflows" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "name" character varying(200) NOT NULL, "version" integer NOT NULL, "created_by" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "deleted_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_5b5757cc1cd86268019fef52e0c" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "workflows_org_created_idx" ON "workflows"  ("organization_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "workflow_versions" ("id" uuid NOT NULL, "workflow_id" uuid NOT NULL, "version" integer NOT NULL, "definition" jsonb NOT NULL, "created_by" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_a84eb8dc6065f33ce4b1447955f" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_versions_workflow_created_idx" ON "workflow_versions"  ("workflow_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "workflow_versions_workflow_version_key" ON "workflow_versions"  ("workflow_id", "version") `,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_runs" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "workflow_id" uuid NOT NULL, "workflow_version" integer NOT NULL, "status" character varying(16) NOT NULL, "input" jsonb, "output" jsonb, "error" jsonb, "attempts" integer NOT NULL DEFAULT '0', "job_id" uuid, "timeout_ms" integer NOT NULL, "triggered_by" jsonb NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_eea9f8d0a660b3f48114c313233" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "workflow_runs_unfinished_idx" ON "workflow_runs"  ("created_at") WHERE status IN ('queued', 'running')`,
    );
    await queryRunner.query(`CREATE INDEX "workflow_runs_workflow_created_idx" ON "workflow_runs"  ("workflow_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "workflow_run_steps" ("run_id" uuid NOT NULL, "step_id" character varying(64) NOT NULL, "position" integer NOT NULL, "status" character varying(16) NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "input" jsonb, "output" jsonb, "error" jsonb, "execution_id" uuid, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_0a3c7de747433ebd7115e5dd376" PRIMARY KEY ("run_id", "step_id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflows" ADD CONSTRAINT "FK_d0327b3752cf21c97fb7ae9f0b2" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_versions" ADD CONSTRAINT "FK_535cc897570fe88cb9733411ecc" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_runs" ADD CONSTRAINT "FK_a2995918456c0a612cf1e5ba22a" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "workflow_run_steps" ADD CONSTRAINT "FK_2861181c012a281009f7cf8a432" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_run_steps" DROP CONSTRAINT "FK_2861181c012a281009f7cf8a432"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP CONSTRAINT "FK_a2995918456c0a612cf1e5ba22a"`);
    await queryRunner.query(`ALTER TABLE "workflow_versions" DROP CONSTRAINT "FK_535cc897570fe88cb9733411ecc"`);
    await queryRunner.query(`ALTER TABLE "workflows" DROP CONSTRAINT "FK_d0327b3752cf21c97fb7ae9f0b2"`);
    await queryRunner.query(`DROP TABLE "workflow_run_steps"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_runs_workflow_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_runs_unfinished_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_runs"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_versions_workflow_version_key"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_versions_workflow_created_idx"`);
    await queryRunner.query(`DROP TABLE "workflow_versions"`);
    await queryRunner.query(`DROP INDEX "public"."workflows_org_created_idx"`);
    await queryRunner.query(`DROP TABLE "workflows"`);
  }
}
