import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SAML as IdPs send it: the organization's SP key pairs (signing and encryption, the private key
 * sealed; at most one current pair, rotated-out ones until their retire_at), SAML sessions by
 * NameID and SessionIndex (single logout), the assertion IDs of IdP-initiated sign-ins (replay
 * cache), and the session a one-time sign-in code starts. New tables, and one nullable column
 * without a default on saml_login_codes (no rewrite).
 */
export class SamlSpKeys1795830000000 implements MigrationInterface {
  name = 'SamlSpKeys1795830000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "saml_sp_keys" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "certificate" text NOT NULL, "private_key" text NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "retire_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_9b539a6b4a59a3a9e94ff344e69" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "saml_sp_keys_organization_idx" ON "saml_sp_keys" ("organization_id", "created_at")`);
    await queryRunner.query(`CREATE UNIQUE INDEX "saml_sp_keys_current_key" ON "saml_sp_keys" ("organization_id") WHERE retire_at IS NULL`);
    await queryRunner.query(
      `CREATE TABLE "saml_sessions" ("family_id" uuid NOT NULL, "organization_id" uuid NOT NULL, "user_id" uuid NOT NULL, "name_id" character varying(1024) NOT NULL, "name_id_format" character varying(256), "session_index" character varying(256), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_30a0a95ca57dec66fb89a0dcfe7" PRIMARY KEY ("family_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "saml_sessions_expires_idx" ON "saml_sessions" ("expires_at")`);
    await queryRunner.query(`CREATE INDEX "saml_sessions_user_idx" ON "saml_sessions" ("user_id")`);
    await queryRunner.query(`CREATE INDEX "saml_sessions_name_idx" ON "saml_sessions" ("organization_id", "name_id")`);
    await queryRunner.query(
      `CREATE TABLE "saml_assertions" ("organization_id" uuid NOT NULL, "id" character varying(256) NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_c5b6a16c7c136930e6469d52356" PRIMARY KEY ("organization_id", "id"))`,
    );
    await queryRunner.query(`CREATE INDEX "saml_assertions_expires_idx" ON "saml_assertions" ("expires_at")`);
    await queryRunner.query(`ALTER TABLE "saml_login_codes" ADD "family_id" uuid`);
    await queryRunner.query(
      `ALTER TABLE "saml_sp_keys" ADD CONSTRAINT "FK_4ba9cbd5b732b01ce4472803edb" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "saml_sessions" ADD CONSTRAINT "FK_05a13a75ade328b12bf321dc1ab" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "saml_login_codes" DROP COLUMN "family_id"`);
    await queryRunner.query(`DROP TABLE "saml_assertions"`);
    await queryRunner.query(`DROP TABLE "saml_sessions"`);
    await queryRunner.query(`DROP TABLE "saml_sp_keys"`);
  }
}
