import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who each user is at its organization's OpenID Connect provider (issuer and subject), linked at
 * the first sign-in: later sign-ins find the user by these instead of by email. One subject per
 * user and issuer; gone with the user or the organization.
 */
export class OidcIdentities1796195877061 implements MigrationInterface {
  name = 'OidcIdentities1796195877061';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "oidc_identities" ("organization_id" uuid NOT NULL, "issuer" character varying(2048) NOT NULL, "subject" character varying(255) NOT NULL, "user_id" uuid NOT NULL, "linked_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_e41680853f8f0d07568f418ed52" PRIMARY KEY ("organization_id", "issuer", "subject"))`,
    );
    await queryRunner.query(`CREATE INDEX "oidc_identities_user_idx" ON "oidc_identities"  ("user_id") `);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "oidc_identities_user_issuer_key" ON "oidc_identities"  ("organization_id", "issuer", "user_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "oidc_identities" ADD CONSTRAINT "FK_3f74f97fce79615922865f925e4" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "oidc_identities" ADD CONSTRAINT "FK_9fe6252422ff84d3a961b11b930" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "oidc_identities" DROP CONSTRAINT "FK_9fe6252422ff84d3a961b11b930"`);
    await queryRunner.query(`ALTER TABLE "oidc_identities" DROP CONSTRAINT "FK_3f74f97fce79615922865f925e4"`);
    await queryRunner.query(`DROP INDEX "public"."oidc_identities_user_issuer_key"`);
    await queryRunner.query(`DROP INDEX "public"."oidc_identities_user_idx"`);
    await queryRunner.query(`DROP TABLE "oidc_identities"`);
  }
}
