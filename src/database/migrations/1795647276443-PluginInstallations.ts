import { MigrationInterface, QueryRunner } from 'typeorm';

export class PluginInstallations1795647276443 implements MigrationInterface {
  name = 'PluginInstallations1795647276443';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "plugin_installations" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "slug" character varying(64) NOT NULL, "version" character varying(32) NOT NULL, "config" jsonb NOT NULL, "sealed_secrets" text, "installed_by" uuid NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_af29f092b24666b0ceacead453c" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "plugin_installations_org_created_idx" ON "plugin_installations"  ("organization_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "plugin_installations_org_slug_key" ON "plugin_installations"  ("organization_id", "slug") `,
    );
    await queryRunner.query(
      `ALTER TABLE "plugin_installations" ADD CONSTRAINT "FK_eb682ff6133e305c0955f35ccc5" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "plugin_installations" DROP CONSTRAINT "FK_eb682ff6133e305c0955f35ccc5"`);
    await queryRunner.query(`DROP INDEX "public"."plugin_installations_org_slug_key"`);
    await queryRunner.query(`DROP INDEX "public"."plugin_installations_org_created_idx"`);
    await queryRunner.query(`DROP TABLE "plugin_installations"`);
  }
}
