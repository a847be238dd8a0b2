import { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1795688002008 implements MigrationInterface {
  name = 'Webhooks1795688002008';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_endpoints" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "url" text NOT NULL, "description" text, "event_types" jsonb NOT NULL, "enabled" boolean NOT NULL, "sealed_secrets" text NOT NULL, "disabled_reason" text, "failing_since" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_054c4cfb95223732f5939d2d546" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_endpoints_org_created_idx" ON "webhook_endpoints"  ("organization_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_messages" ("id" text NOT NULL, "organization_id" uuid NOT NULL, "endpoint_id" uuid NOT NULL, "type" text NOT NULL, "payload" text NOT NULL, "status" character varying(16) NOT NULL, "attempts" integer NOT NULL, "job_id" uuid, "error" jsonb, "next_attempt_at" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_526e8e1655924920adc4cd30dcd" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_messages_unfinished_idx" ON "webhook_messages"  ("created_at") WHERE status IN ('queued', 'running')`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_messages_endpoint_created_idx" ON "webhook_messages"  ("endpoint_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_attempts" ("id" uuid NOT NULL, "message_id" text NOT NULL, "attempted_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "status_code" integer, "latency_ms" integer NOT NULL, "response_body" text, "error" text, CONSTRAINT "PK_2de7e7887ad97de459adab62638" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "webhook_attempts_message_idx" ON "webhook_attempts"  ("message_id", "attempted_at") `);
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "FK_893247a8681e31f117a34b4fb46" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_messages" ADD CONSTRAINT "FK_2ebdc23f5ae2b27a09c8446c899" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "FK_7dbf25c6722243e3cb16ef9fb27" FOREIGN KEY ("message_id") REFERENCES "webhook_messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_attempts" DROP CONSTRAINT "FK_7dbf25c6722243e3cb16ef9fb27"`);
    await queryRunner.query(`ALTER TABLE "webhook_messages" DROP CONSTRAINT "FK_2ebdc23f5ae2b27a09c8446c899"`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "FK_893247a8681e31f117a34b4fb46"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_attempts_message_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_messages_endpoint_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_messages_unfinished_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_messages"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_endpoints_org_created_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
  }
}
