import { MigrationInterface, QueryRunner } from 'typeorm';

export class ApiKeys1795697757590 implements MigrationInterface {
  name = 'ApiKeys1795697757590';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "service_accounts" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "name" character varying(100) NOT NULL, "role" character varying(16) NOT NULL, "disabled" boolean NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_e2fb216fdc1db94c5e4da7d88fa" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "service_accounts_org_created_idx" ON "service_accounts"  ("organization_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "api_keys" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "owner_type" character varying(20) NOT NULL, "owner_id" uuid NOT NULL, "name" character varying(100) NOT NULL, "scopes" jsonb, "display_prefix" character varying(16) NOT NULL, "hash" character(64) NOT NULL, "previous_hash" character(64), "previous_expires_at" TIMESTAMP(3) WITH TIME ZONE, "owner_version" integer NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE, "last_used_at" TIMESTAMP(3) WITH TIME ZONE, "revoked_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "api_keys_previous_hash_idx" ON "api_keys"  ("previous_hash") WHERE previous_hash IS NOT NULL`);
    await queryRunner.query(`CREATE UNIQUE INDEX "api_keys_hash_key" ON "api_keys"  ("hash") `);
    await queryRunner.query(`CREATE INDEX "api_keys_owner_created_idx" ON "api_keys"  ("owner_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "api_key_events" ("id" BIGSERIAL NOT NULL, "key_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "type" character varying(16) NOT NULL, "actor" jsonb NOT NULL, "at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_8d3b86a696c6ad43b3461536543" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "api_key_events_key_idx" ON "api_key_events"  ("key_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "api_key_policies" ("organization_id" uuid NOT NULL, "max_lifetime_days" integer, CONSTRAINT "PK_9bce1683b94d908754f59c3e865" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(`ALTER TABLE "users" ADD "keys_version" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(
      `ALTER TABLE "service_accounts" ADD CONSTRAINT "FK_ec5d48b8cb04b1a581453edee94" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "api_keys" ADD CONSTRAINT "FK_a283bdef18876e525aefaec042f" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "api_key_events" ADD CONSTRAINT "FK_15ff64b13b94d1d078a8d1e9166" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "api_key_policies" ADD CONSTRAINT "FK_9bce1683b94d908754f59c3e865" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_key_policies" DROP CONSTRAINT "FK_9bce1683b94d908754f59c3e865"`);
    await queryRunner.query(`ALTER TABLE "api_key_events" DROP CONSTRAINT "FK_15ff64b13b94d1d078a8d1e9166"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP CONSTRAINT "FK_a283bdef18876e525aefaec042f"`);
    await queryRunner.query(`ALTER TABLE "service_accounts" DROP CONSTRAINT "FK_ec5d48b8cb04b1a581453edee94"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "keys_version"`);
    await queryRunner.query(`DROP TABLE "api_key_policies"`);
    await queryRunner.query(`DROP INDEX "public"."api_key_events_key_idx"`);
    await queryRunner.query(`DROP TABLE "api_key_events"`);
    await queryRunner.query(`DROP INDEX "public"."api_keys_owner_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."api_keys_hash_key"`);
    await queryRunner.query(`DROP INDEX "public"."api_keys_previous_hash_idx"`);
    await queryRunner.query(`DROP TABLE "api_keys"`);
    await queryRunner.query(`DROP INDEX "public"."service_accounts_org_created_idx"`);
    await queryRunner.query(`DROP TABLE "service_accounts"`);
  }
}
