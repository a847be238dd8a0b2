import { MigrationInterface, QueryRunner } from 'typeorm';

export class CredentialsVersion1795677573178 implements MigrationInterface {
  name = 'CredentialsVersion1795677573178';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "users" ADD "credentials_version" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "refresh_tokens" ADD "credentials_version" integer NOT NULL DEFAULT '0'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "credentials_version"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "credentials_version"`);
  }
}
