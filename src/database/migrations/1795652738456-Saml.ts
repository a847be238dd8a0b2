import { MigrationInterface, QueryRunner } from 'typeorm';

export class Saml1795652738456 implements MigrationInterface {
  name = 'Saml1795652738456';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "saml_settings" ("organization_id" uuid NOT NULL, "settings" jsonb NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_682b925d879ff24c0f16d05eb30" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "saml_requests" ("id" character varying(128) NOT NULL, "organization_id" uuid NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_6bfb0a52a23916eaf5f1586beab" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "saml_requests_expires_idx" ON "saml_requests"  ("expires_at") `);
    await queryRunner.query(
      `CREATE TABLE "saml_login_codes" ("code_hash" character(64) NOT NULL, "user_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_47bbd681449eea46d1e35a689ed" PRIMARY KEY ("code_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "saml_login_codes_expires_idx" ON "saml_login_codes"  ("expires_at") `);
    await queryRunner.query(`ALTER TABLE "users" ADD "first_name" character varying(200)`);
    await queryRunner.query(`ALTER TABLE "users" ADD "last_name" character varying(200)`);
    await queryRunner.query(
      `ALTER TABLE "saml_settings" ADD CONSTRAINT "FK_682b925d879ff24c0f16d05eb30" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "saml_settings" DROP CONSTRAINT "FK_682b925d879ff24c0f16d05eb30"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "last_name"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "first_name"`);
    await queryRunner.query(`DROP INDEX "public"."saml_login_codes_expires_idx"`);
    await queryRunner.query(`DROP TABLE "saml_login_codes"`);
    await queryRunner.query(`DROP INDEX "public"."saml_requests_expires_idx"`);
    await queryRunner.query(`DROP TABLE "saml_requests"`);
    await queryRunner.query(`DROP TABLE "saml_settings"`);
  }
}
