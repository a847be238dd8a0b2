import { MigrationInterface, QueryRunner } from 'typeorm';

export class Initial1795646282020 implements MigrationInterface {
  name = 'Initial1795646282020';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "organizations" ("id" uuid NOT NULL, "slug" character varying(63) NOT NULL, "name" character varying(200) NOT NULL, "tier" character varying(16) NOT NULL, "rate_limit_per_minute" integer, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_6b031fcd0863e3f6b44230163f9" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "organizations_created_idx" ON "organizations"  ("created_at", "id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "organizations_slug_key" ON "organizations"  ("slug") `);
    await queryRunner.query(
      `CREATE TABLE "users" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "email" character varying(320) NOT NULL, "password_hash" character varying(200), "role" character varying(16) NOT NULL, "disabled" boolean NOT NULL DEFAULT false, "is_operator" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "users_org_created_idx" ON "users"  ("organization_id", "created_at", "id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "users_email_key" ON "users"  ("email") `);
    await queryRunner.query(
      `CREATE TABLE "refresh_tokens" ("id" uuid NOT NULL, "user_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "family_id" uuid NOT NULL, "token_hash" character(64) NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP(3) WITH TIME ZONE, "revoked_at" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_7d8bee0204106019488c4c50ffa" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "refresh_tokens_hash_key" ON "refresh_tokens"  ("token_hash") `);
    await queryRunner.query(`CREATE INDEX "refresh_tokens_family_idx" ON "refresh_tokens"  ("family_id") `);
    await queryRunner.query(`CREATE INDEX "refresh_tokens_user_idx" ON "refresh_tokens"  ("user_id") `);
    await queryRunner.query(
      `ALTER TABLE "users" ADD CONSTRAINT "FK_21a659804ed7bf61eb91688dea7" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "refresh_tokens" ADD CONSTRAINT "FK_3ddc983c5f7bcf132fd8732c3f4" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "refresh_tokens" DROP CONSTRAINT "FK_3ddc983c5f7bcf132fd8732c3f4"`);
    await queryRunner.query(`ALTER TABLE "users" DROP CONSTRAINT "FK_21a659804ed7bf61eb91688dea7"`);
    await queryRunner.query(`DROP INDEX "public"."refresh_tokens_user_idx"`);
    await queryRunner.query(`DROP INDEX "public"."refresh_tokens_family_idx"`);
    await queryRunner.query(`DROP INDEX "public"."refresh_tokens_hash_key"`);
    await queryRunner.query(`DROP TABLE "refresh_tokens"`);
    await queryRunner.query(`DROP INDEX "public"."users_email_key"`);
    await queryRunner.query(`DROP INDEX "public"."users_org_created_idx"`);
    await queryRunner.query(`DROP TABLE "users"`);
    await queryRunner.query(`DROP INDEX "public"."organizations_slug_key"`);
    await queryRunner.query(`DROP INDEX "public"."organizations_created_idx"`);
    await queryRunner.query(`DROP TABLE "organizations"`);
  }
}
