import { MigrationInterface, QueryRunner } from 'typeorm';

export class Trial1795753813667 implements MigrationInterface {
  name = 'Trial1795753813667';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "installation_trial" ("id" smallint NOT NULL, "started_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_2919d95ecab08eecefe5ca93cde" PRIMARY KEY ("id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "installation_trial"`);
  }
}
