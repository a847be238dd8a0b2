import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * OpenID Connect sign-in per organization: its settings (the client secret sealed beside them)
 * and the sign-ins sent to the provider and not yet answered (state hash, nonce, PKCE verifier,
 * redirect; ten minutes, once). The one-time login codes, shared with SAML, now say how their
 * user signed in (`via`, 'saml' for the codes issued before).
 */
export class OidcSignIn1795820000000 implements MigrationInterface {
  name = 'OidcSignIn1795820000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "oidc_settings" ("organization_id" uuid NOT NULL, "settings" jsonb NOT NULL, "sealed_client_secret" text NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_01b18c09309515d3d12570df645" PRIMARY KEY ("organization_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "oidc_logins" ("state_hash" character(64) NOT NULL, "organization_id" uuid NOT NULL, "nonce" character varying(128) NOT NULL, "code_verifier" character varying(128) NOT NULL, "redirect" text, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_b15a7f79cc38b128237395d0832" PRIMARY KEY ("state_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "oidc_logins_expires_idx" ON "oidc_logins"  ("expires_at") `);
    await queryRunner.query(`ALTER TABLE "saml_login_codes" ADD "via" character varying(8) NOT NULL DEFAULT 'saml'`);
    await queryRunner.query(
      `ALTER TABLE "oidc_settings" ADD CONSTRAINT "FK_01b18c09309515d3d12570df645" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "oidc_logins" ADD CONSTRAINT "FK_85504c6b27676bcb4bae0cb3ee8" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "oidc_logins" DROP CONSTRAINT "FK_85504c6b27676bcb4bae0cb3ee8"`);
    await queryRunner.query(`ALTER TABLE "oidc_settings" DROP CONSTRAINT "FK_01b18c09309515d3d12570df645"`);
    await queryRunner.query(`ALTER TABLE "saml_login_codes" DROP COLUMN "via"`);
    await queryRunner.query(`DROP INDEX "public"."oidc_logins_expires_idx"`);
    await queryRunner.query(`DROP TABLE "oidc_logins"`);
    await queryRunner.query(`DROP TABLE "oidc_settings"`);
  }
}
