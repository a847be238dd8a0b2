import { MigrationInterface, QueryRunner } from 'typeorm';

export class SeatQuota1795679413468 implements MigrationInterface {
  name = 'SeatQuota1795679413468';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "organizations" ADD "seat_quota" integer`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "organizations" DROP COLUMN "seat_quota"`);
  }
}
