import { MigrationInterface, QueryRunner } from 'typeorm';

export class License1795651894650 implements MigrationInterface {
  name = 'License1795651894650';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "installation_license" ("id" smallint NOT NULL, "key" text NOT NULL, "installed_by" uuid, "installed_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_260c69f68e0d73d8629eef05117" PRIMARY KEY ("id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "installation_license"`);
  }
}
