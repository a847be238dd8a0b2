import { MigrationInterface, QueryRunner } from 'typeorm';

export class Agents1795648883358 implements MigrationInterface {
  name = 'Agents1795648883358';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "agents" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "name" character varying(200) NOT NULL, "description" text NOT NULL, "kind" character varying(130) NOT NULL, "plugin_slug" character varying(64) NOT NULL, "config" jsonb NOT NULL, "input_schema" jsonb, "timeout_ms" integer NOT NULL, "max_attempts" integer NOT NULL, "created_by" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_9c653f28ae19c5884d5baf6a1d9" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "agents_org_plugin_idx" ON "agents"  ("organization_id", "plugin_slug") `);
    await queryRunner.query(`CREATE INDEX "agents_org_created_idx" ON "agents"  ("organization_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "agent_executions" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "agent_id" uuid NOT NULL, "status" character varying(16) NOT NULL, "input" jsonb, "output" jsonb, "error" jsonb, "attempts" integer NOT NULL DEFAULT '0', "job_id" uuid, "triggered_by" jsonb NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_1be5b595730621debe308ad2c6d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "agent_executions_unfinished_idx" ON "agent_executions"  ("created_at") WHERE status IN ('queued', 'running')`,
    );
    await queryRunner.query(`CREATE INDEX "agent_executions_agent_created_idx" ON "agent_executions"  ("agent_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "idempotency_keys" ("organization_id" uuid NOT NULL, "scope" character varying(200) NOT NULL, "key" character varying(255) NOT NULL, "request_hash" character(64) NOT NULL, "resource_id" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_d9221c4775b179ac6ffa0f8a088" PRIMARY KEY ("organization_id", "scope", "key"))`,
    );
    await queryRunner.query(`CREATE INDEX "idempotency_keys_expires_idx" ON "idempotency_keys"  ("expires_at") `);
    await queryRunner.query(
      `ALTER TABLE "agents" ADD CONSTRAINT "FK_28ac537f8c7bc3c96f7d1753ec4" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_executions" ADD CONSTRAINT "FK_07f1d13325a800f8ee793981d37" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agent_executions" DROP CONSTRAINT "FK_07f1d13325a800f8ee793981d37"`);
    await queryRunner.query(`ALTER TABLE "agents" DROP CONSTRAINT "FK_28ac537f8c7bc3c96f7d1753ec4"`);
    await queryRunner.query(`DROP INDEX "public"."idempotency_keys_expires_idx"`);
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
    await queryRunner.query(`DROP INDEX "public"."agent_executions_agent_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."agent_executions_unfinished_idx"`);
    await queryRunner.query(`DROP TABLE "agent_executions"`);
    await queryRunner.query(`DROP INDEX "public"."agents_org_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."agents_org_plugin_idx"`);
    await queryRunner.query(`DROP TABLE "agents"`);
  }
}
